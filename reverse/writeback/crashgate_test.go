package writeback

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// gateMode says where pushGate holds the first push.
type gateMode int

const (
	// gateOpen passes every request through.
	gateOpen gateMode = iota
	// gateBeforePush holds the push before the server sees it: the commit
	// exists only in the pusher's clone.
	gateBeforePush
	// gateBeforeAck lets the server apply the push and holds its answer:
	// the branch is on the remote but the pusher never learns it.
	gateBeforeAck
)

// pushGate is a loopback reverse proxy in front of a git server that holds
// the first push (POST .../git-receive-pack), so a test can kill the
// pushing process at a known point of the write-back.
type pushGate struct {
	mode  gateMode
	next  http.Handler
	taken atomic.Bool
	// held is closed once the push is held.
	held chan struct{}
	// ackCode is the server's status for a gateBeforeAck push; read it
	// after held is closed.
	ackCode int
	release chan struct{}
	unblock sync.Once
}

// startPushGate serves a gate in front of target and returns it with its
// base URL; the held push is failed when the test ends at the latest.
func startPushGate(t *testing.T, target string, mode gateMode) (*pushGate, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	// A transport of its own: every httptest.Server.Close in this process
	// closes http.DefaultTransport's idle connections, and one closed just
	// as the proxy reused it broke a fetch mid-response (seen in CI).
	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(transport.CloseIdleConnections)
	proxy.Transport = transport
	g := &pushGate{mode: mode, next: proxy,
		held: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	// Cleanups run last-in first-out: the held handler must return before
	// srv.Close waits for it.
	t.Cleanup(g.fail)
	return g, srv.URL
}

// fail lets the held push return an error to whoever is still listening.
func (g *pushGate) fail() {
	g.unblock.Do(func() { close(g.release) })
}

func (g *pushGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	push := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
	if g.mode == gateOpen || !push || !g.taken.CompareAndSwap(false, true) {
		g.next.ServeHTTP(w, r)
		return
	}
	if g.mode == gateBeforeAck {
		rec := httptest.NewRecorder()
		g.next.ServeHTTP(rec, r)
		g.ackCode = rec.Code
	}
	close(g.held)
	<-g.release
	http.Error(w, "push held by a crash test", http.StatusBadGateway)
}
