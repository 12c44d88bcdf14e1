package load

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// result is what a generator run measured.
type result struct {
	Requests   int
	Throughput float64
	P50, P99   time.Duration
	// Open loop only: the 99th percentile of how late reviews left the
	// generator, and the 50th/99th percentile from leaving to the answer.
	LagP99, AnswerP50, AnswerP99 time.Duration
}

// run sends reviews from `concurrency` workers for `duration` and checks every
// answer is a well-formed allowed AdmissionReview (a load test of errors
// would measure nothing).
func run(c *http.Client, url string, bodies [][]byte) (result, error) {
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  atomic.Int64
		firstErr  atomic.Value
	)
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range concurrency {
		wg.Go(func() {
			local := make([]time.Duration, 0, 4096)
			for i := w; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				err := post(c, url, bodies[i%len(bodies)])
				local = append(local, time.Since(t0))
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
			mu.Lock()
			latencies = append(latencies, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := failures.Load(); n > 0 {
		return result{}, fmt.Errorf("%d of %d reviews failed, first: %v", n, len(latencies), firstErr.Load())
	}
	return summarize(latencies, elapsed), nil
}

// runOpenLoop sends rate reviews per second for duration. Latency counts
// from the time a review was due, so a server that falls behind shows it.
func runOpenLoop(c *http.Client, url string, bodies [][]byte, rate int) (result, error) {
	total := int(float64(rate) * duration.Seconds())
	interval := time.Second / time.Duration(rate)
	latencies := make([]time.Duration, total)
	// lags are how late each review left (the generator's own delay), and
	// answers how long it then took to be answered.
	lags := make([]time.Duration, total)
	answers := make([]time.Duration, total)
	var (
		failures atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
	)
	slots := make(chan struct{}, maxInFlight)
	start := time.Now()
	for i := range total {
		scheduled := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(scheduled))
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			sent := time.Now()
			err := post(c, url, bodies[i%len(bodies)])
			latencies[i] = time.Since(scheduled)
			lags[i], answers[i] = sent.Sub(scheduled), time.Since(sent)
			if err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := failures.Load(); n > 0 {
		return result{}, fmt.Errorf("%d of %d reviews failed, first: %v", n, total, firstErr.Load())
	}
	r := summarize(latencies, elapsed)
	r.LagP99, r.AnswerP50, r.AnswerP99 = summarize(lags, elapsed).P99, summarize(answers, elapsed).P50, summarize(answers, elapsed).P99
	return r, nil
}

func summarize(latencies []time.Duration, elapsed time.Duration) result {
	if len(latencies) == 0 {
		return result{}
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	return result{
		Requests:   len(latencies),
		Throughput: float64(len(latencies)) / elapsed.Seconds(),
		P50:        latencies[len(latencies)/2],
		P99:        latencies[len(latencies)*99/100],
	}
}

func post(c *http.Client, url string, body []byte) error {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	// Only what the check needs is decoded: the generator shares the two
	// cores with the server it measures.
	var out answer
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("decoding the answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if out.Kind != "AdmissionReview" || out.Response == nil || !out.Response.Allowed || out.Response.UID != "load" {
		return fmt.Errorf("not an allowed AdmissionReview for this request (HTTP %d): %s", resp.StatusCode, data)
	}
	return nil
}

// protocol is the HTTP version the client and the webhook server agree on.
func protocol(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	_ = resp.Body.Close()
	return resp.Proto, nil
}

// answer is the part of an AdmissionReview response the generator checks.
type answer struct {
	Kind     string `json:"kind"`
	Response *struct {
		UID     string `json:"uid"`
		Allowed bool   `json:"allowed"`
	} `json:"response"`
}

// tlsClient trusts the CA of envtest's webhook serving certificate, as the
// apiserver does through the webhook configuration's caBundle, and offers
// HTTP/2 as the apiserver does: the server's protocol negotiation decides
// (HTTP/1.1 unless mpiguard serve --enable-http2).
func tlsClient(ca []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("no CA certificate for the webhook server")
	}
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: maxInFlight,
			ForceAttemptHTTP2:   true,
		},
	}, nil
}
