package devcluster

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
)

// backends starts n TLS servers that answer with their index and count the
// requests they handled, and a proxy in front of them.
func proxiedBackends(t *testing.T, n int) (*Proxy, []*httptest.Server, []*atomic.Int64, *http.Client) {
	t.Helper()
	servers := make([]*httptest.Server, n)
	handled := make([]*atomic.Int64, n)
	addrs := make([]string, n)
	for i := range servers {
		handled[i] = &atomic.Int64{}
		servers[i] = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			handled[i].Add(1)
			_, _ = io.WriteString(w, strconv.Itoa(i))
		}))
		t.Cleanup(servers[i].Close)
		addrs[i] = servers[i].Listener.Addr().String()
	}
	p, err := StartProxy("127.0.0.1:0", addrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	// The servers share httptest's certificate (for 127.0.0.1), so one client
	// trusts them all through the proxy; one connection per request, so each
	// request is one turn of the round-robin.
	c := servers[0].Client()
	c.Transport.(*http.Transport).DisableKeepAlives = true
	return p, servers, handled, c
}

func get(c *http.Client, addr string) (string, error) {
	resp, err := c.Get("https://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestProxyAlternatesBackendsAndSkipsStoppedOnes(t *testing.T) {
	p, servers, _, c := proxiedBackends(t, 2)
	var got []string
	for range 4 {
		body, err := get(c, p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, body)
	}
	if want := []string{"0", "1", "0", "1"}; !slices.Equal(got, want) {
		t.Errorf("answered by %v, want %v", got, want)
	}
	servers[1].Close()
	for range 3 {
		body, err := get(c, p.Addr())
		if err != nil {
			t.Fatalf("with backend 1 stopped: %v", err)
		}
		if body != "0" {
			t.Errorf("answered by %s with backend 1 stopped", body)
		}
	}
	if got, want := p.Accepted(), []int64{5, 2}; !slices.Equal(got, want) {
		t.Errorf("Accepted() = %v, want %v", got, want)
	}
}

// TestProxyDropsResponsesAfterTheBackendDecided: a dropped response fails the
// client although the backend handled the request; the next one goes through.
func TestProxyDropsResponsesAfterTheBackendDecided(t *testing.T) {
	p, _, handled, c := proxiedBackends(t, 1)
	p.DropNextResponses(2)
	for i := range 2 {
		if body, err := get(c, p.Addr()); err == nil {
			t.Fatalf("request %d answered %q, want a transport error", i, body)
		}
	}
	if got := handled[0].Load(); got != 2 {
		t.Errorf("the backend handled %d requests, want 2: the proxy must drop the answer, not the request", got)
	}
	if body, err := get(c, p.Addr()); err != nil || body != "0" {
		t.Errorf("after the drops: %q, %v", body, err)
	}
	if got := p.Dropped(); got != 2 {
		t.Errorf("Dropped() = %d, want 2", got)
	}
}
