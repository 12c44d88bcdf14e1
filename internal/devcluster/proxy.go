package devcluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is the webhook Service of a multi-replica environment: a loopback TCP
// proxy on the address the webhook configurations point to, forwarding each
// connection to the next replica in turn. It passes TLS through untouched (the
// replicas serve envtest's certificate themselves), so the apiserver talks to
// a replica exactly as it talks to a pod behind a Service.
//
// The apiserver keeps idle connections and reuses them, so requests are spread
// per connection, not per request: parallel requests open connections and
// reach every replica; sequential ones may all ride on one connection.
type Proxy struct {
	ln       net.Listener
	backends []string
	accepted []atomic.Int64
	next     atomic.Uint64
	drop     atomic.Int64
	dropped  atomic.Int64
	// down: every connection is closed at once (SetDown).
	down atomic.Bool

	mu     sync.Mutex
	open   map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// dialTimeout bounds a dial to a backend: a loopback dial to a stopped replica
// is refused at once, so this is only reached when something is badly wrong.
const dialTimeout = 2 * time.Second

// StartProxy listens on addr and forwards every connection to one of backends,
// round-robin, skipping backends that refuse it.
func StartProxy(addr string, backends []string) (*Proxy, error) {
	if len(backends) == 0 {
		return nil, errors.New("proxy: no backends")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy: listening on %s: %w", addr, err)
	}
	p := &Proxy{ln: ln, backends: backends, accepted: make([]atomic.Int64, len(backends)), open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted returns, per backend, how many connections the proxy forwarded to it.
func (p *Proxy) Accepted() []int64 {
	out := make([]int64, len(p.accepted))
	for i := range p.accepted {
		out[i] = p.accepted[i].Load()
	}
	return out
}

// DropNextResponses makes the next n connections the proxy accepts fail after
// their first request reached a replica: the client's bytes are forwarded, but
// the client's connection is closed when the replica starts its answer. The
// apiserver then gets a transport error (EOF) for a request the webhook already
// handled, as when a replica dies between its decision and its answer. It
// replaces any count not used up yet; a connection already marked stays so.
//
// The apiserver reuses idle connections, and at times dials one ahead of need,
// so call CloseConnections right after this: the next request then rides on a
// new, marked connection. Its first request is the first webhook call of the
// apiserver's next admission: the mutating webhook's, for TrainJobs.
func (p *Proxy) DropNextResponses(n int) { p.drop.Store(int64(n)) }

// SetDown makes mpiguard unreachable with true, as when every pod is down: the
// proxy closes each connection it accepts, and the ones it is forwarding, so
// every webhook call fails. SetDown(false) serves again.
func (p *Proxy) SetDown(down bool) {
	p.down.Store(down)
	if down {
		p.CloseConnections()
	}
}

// Dropped says how many responses DropNextResponses has dropped so far.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

// CloseConnections closes every connection the proxy is forwarding, so the
// apiserver's next requests dial new ones (and are spread anew). Requests in
// flight on them fail: call it when none are.
func (p *Proxy) CloseConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.open {
		_ = c.Close()
	}
}

// Close stops listening, closes every connection and waits for the proxy's
// goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.CloseConnections()
	p.wg.Wait()
	return err
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(client) {
			_ = client.Close()
			return
		}
		if p.down.Load() {
			p.untrack(client)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(client)
			backend, ok := p.dial()
			if !ok {
				return // no replica takes connections: the client sees it closed
			}
			if !p.track(backend) {
				_ = backend.Close()
				return
			}
			defer p.untrack(backend)
			p.forward(client, backend, p.takeDrop())
		}()
	}
}

// dial connects to the next backend in turn; a backend that refuses (a stopped
// replica) is skipped for the next one.
func (p *Proxy) dial() (net.Conn, bool) {
	first := p.next.Add(1) - 1
	for i := range uint64(len(p.backends)) {
		b := int((first + i) % uint64(len(p.backends)))
		conn, err := net.DialTimeout("tcp", p.backends[b], dialTimeout)
		if err == nil {
			p.accepted[b].Add(1)
			return conn, true
		}
	}
	return nil, false
}

// takeDrop claims one of the responses DropNextResponses asked to drop.
func (p *Proxy) takeDrop() bool {
	for {
		n := p.drop.Load()
		if n <= 0 {
			return false
		}
		if p.drop.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// forward copies bytes both ways until either side closes, then closes both.
func (p *Proxy) forward(client, backend net.Conn, drop bool) {
	done := make(chan struct{}, 2)
	if !drop {
		go func() { _, _ = io.Copy(backend, client); done <- struct{}{} }()
		go func() { _, _ = io.Copy(client, backend); done <- struct{}{} }()
	} else {
		// TLS passthrough cannot see where the request ends. The turns of the
		// conversation can: the client's hello, the replica's handshake flight
		// (TLS 1.3; Go sends its session tickets in it when it asks for no
		// client certificate), the client's Finished and request, then the
		// replica's answer. The first byte of that fourth turn closes the
		// client's connection. Each side only speaks after reading the other,
		// so the turns are seen in order.
		var turn atomic.Int32 // 0 hello, 1 server flight, 2 request sent
		go func() {
			_ = copyObserved(backend, client, func() { turn.CompareAndSwap(1, 2) })
			done <- struct{}{}
		}()
		go func() {
			_ = copyObserved(client, backend, func() {
				if turn.CompareAndSwap(0, 1) || turn.Load() == 1 {
					return
				}
				p.dropped.Add(1)
				_ = client.Close()
			})
			done <- struct{}{}
		}()
	}
	<-done
	_ = client.Close()
	_ = backend.Close()
	<-done
}

// copyObserved is io.Copy, without the count, that calls seen before
// writing each chunk read.
func copyObserved(dst io.Writer, src io.Reader, seen func()) error {
	buf := make([]byte, 32<<10)
	for {
		r, err := src.Read(buf)
		if r > 0 {
			seen()
			if _, werr := dst.Write(buf[:r]); werr != nil {
				return werr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.open[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
	_ = c.Close()
}
