package testenv

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// FaultProxy is an HTTP reverse proxy on loopback in front of a git
// server or a forge's API that fails on command. StallProxy plays a host
// that never answers; FaultProxy plays one that is down (connections
// dropped), one that answers errors (500, or 429 with Retry-After), and,
// with Trap, one whose client dies at a chosen request: before the server
// sees it, or after the server has applied it and before the client
// learns so.
type FaultProxy struct {
	l       net.Listener
	srv     *http.Server
	backend *url.URL
	proxy   *httputil.ReverseProxy
	rt      http.RoundTripper

	mu     sync.Mutex
	down   bool
	codes  []int // answered in turn while set
	next   int
	traps  []*Trap
	served map[string]int // answers by kind, for the figures
}

// Trap catches the first request its match accepts and holds it: the
// server has not seen it (TrapBefore) or has answered it in full
// (TrapAfter). Caught is closed then; Release drops the held request's
// connection, so its client, if still alive, sees an error.
type Trap struct {
	match   func(*http.Request) bool
	after   bool
	caught  chan struct{}
	release chan struct{}
	once    sync.Once
	// What describes the caught request, "POST /path"; read it after
	// Caught is closed.
	What string
}

// Caught is closed once the trap holds a request.
func (t *Trap) Caught() <-chan struct{} { return t.caught }

// Release lets the held request end, with its connection dropped. It is
// safe to call more than once, and before anything was caught.
func (t *Trap) Release() { t.once.Do(func() { close(t.release) }) }

// TrapBefore and TrapAfter say when a Trap holds its request.
const (
	TrapBefore = false
	TrapAfter  = true
)

// NewFaultProxy serves a proxy to backend, a base URL such as
// http://127.0.0.1:3000, on a free loopback port. It forwards everything
// until told otherwise.
func NewFaultProxy(backend string) (*FaultProxy, error) {
	u, err := url.Parse(backend)
	if err != nil {
		return nil, fmt.Errorf("parsing the fault proxy's backend %q: %w", backend, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the fault proxy: %w", err)
	}
	// A transport of its own, so closing other servers' idle connections
	// in this process never breaks a relayed request.
	rt := http.DefaultTransport.(*http.Transport).Clone()
	p := &FaultProxy{l: l, backend: u, rt: rt, served: map[string]int{}}
	quiet := log.New(io.Discard, "", 0) // dropped connections are the point
	p.proxy = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = u.Host },
		Transport: rt, ErrorLog: quiet, FlushInterval: -1}
	p.srv = &http.Server{Handler: p, ErrorLog: quiet, ReadHeaderTimeout: time.Minute}
	go func() { _ = p.srv.Serve(l) }() // ends with Close
	return p, nil
}

// URL is the proxy's base URL, to use in place of the backend's.
func (p *FaultProxy) URL() string { return "http://" + p.l.Addr().String() }

// Down makes the proxy drop every connection at its first request, as a
// server that is gone does; Up forwards again and ends Fail too.
func (p *FaultProxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
}

// Up ends Down and Fail.
func (p *FaultProxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down, p.codes = false, nil
}

// Fail answers every request with the codes in turn until Up. A 429 or
// 503 carries Retry-After: 1.
func (p *FaultProxy) Fail(codes ...int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.codes, p.next = codes, 0
}

// Trap holds the first request match accepts, at when (TrapBefore or
// TrapAfter). Requests refused by Down or Fail are never caught.
func (p *FaultProxy) Trap(match func(*http.Request) bool, when bool) *Trap {
	t := &Trap{match: match, after: when, caught: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.traps = append(p.traps, t)
	return t
}

// Untrap disarms t and reports whether it was still armed, having caught
// nothing.
func (p *FaultProxy) Untrap(t *Trap) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, armed := range p.traps {
		if armed == t {
			p.traps = append(p.traps[:i:i], p.traps[i+1:]...)
			return true
		}
	}
	return false
}

// Served counts the requests answered so far by how: "forwarded",
// "dropped", "trapped" or an HTTP status the proxy made up, such as "429".
func (p *FaultProxy) Served() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.served))
	for k, v := range p.served {
		out[k] = v
	}
	return out
}

// Close stops the proxy, releasing every trap.
func (p *FaultProxy) Close() error {
	p.mu.Lock()
	traps := p.traps
	p.mu.Unlock()
	for _, t := range traps {
		t.Release()
	}
	if err := p.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("closing the fault proxy: %w", err)
	}
	return nil
}

// decision is what one request gets.
type decision struct {
	drop bool
	code int
	trap *Trap
}

func (p *FaultProxy) decide(r *http.Request) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.down:
		p.served["dropped"]++
		return decision{drop: true}
	case len(p.codes) > 0:
		c := p.codes[p.next%len(p.codes)]
		p.next++
		p.served[strconv.Itoa(c)]++
		return decision{code: c}
	}
	for i, t := range p.traps {
		if t.match(r) {
			p.traps = append(p.traps[:i:i], p.traps[i+1:]...)
			p.served["trapped"]++
			return decision{trap: t}
		}
	}
	p.served["forwarded"]++
	return decision{}
}

// ServeHTTP applies the proxy's current fault to one request.
func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d := p.decide(r)
	switch {
	case d.drop:
		drop(w)
	case d.code != 0:
		if d.code == http.StatusTooManyRequests || d.code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		http.Error(w, http.StatusText(d.code), d.code)
	case d.trap != nil:
		p.hold(w, r, d.trap)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// hold serves a trapped request: it waits for Release before the backend
// sees it, or relays it and reads the whole answer first, so the backend
// has done its work, and then drops the connection either way.
func (p *FaultProxy) hold(w http.ResponseWriter, r *http.Request, t *Trap) {
	t.What = r.Method + " " + r.URL.Path
	if t.after {
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host, out.Host = p.backend.Scheme, p.backend.Host, p.backend.Host
		if resp, err := p.rt.RoundTrip(out); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body) // the backend finishes its work
			_ = resp.Body.Close()
		}
	}
	close(t.caught)
	<-t.release
	drop(w)
}

// drop closes the request's connection without an answer.
func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // net/http drops the connection
	}
	c, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = c.Close() // that is the answer
}
