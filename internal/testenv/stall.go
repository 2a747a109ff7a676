package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
)

// StallProxy is a TCP proxy on loopback that can play a hung server. While
// stalled it accepts connections and holds them open without reading or
// writing a byte, and stops relaying on connections it was already
// forwarding; a client then sees neither a refusal nor a reset, only
// silence, and must rely on its own deadline. That is the failure a
// connection-refused test cannot show: a git host that accepts and never
// answers.
//
// A client that gives up on a held connection has usually written its
// request already. On Resume the proxy forwards those bytes like any
// others, as a server that recovers reads them from its socket buffer, so
// the backend may still answer a request its client has abandoned.
type StallProxy struct {
	l       net.Listener
	backend string
	ctx     context.Context // done once Close begins
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	stalled bool
	resumed chan struct{} // closed by Resume; replaced by Stall
	conns   map[net.Conn]struct{}
	held    int
}

// NewStallProxy listens on a free 127.0.0.1 port and forwards every
// connection to backend (host:port). It starts forwarding; call Stall to
// hang it.
func NewStallProxy(backend string) (*StallProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the stall proxy: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &StallProxy{l: l, backend: backend, ctx: ctx, cancel: cancel, resumed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.resumed)
	p.wg.Go(p.serve)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *StallProxy) Addr() string {
	return p.l.Addr().String()
}

// Stall makes the proxy hang: new connections are accepted and held, and
// bytes already read on forwarded connections are kept back.
func (p *StallProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stalled {
		p.stalled = true
		p.resumed = make(chan struct{})
	}
}

// Resume forwards again: held connections are connected to the backend,
// and what was kept back is delivered.
func (p *StallProxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled {
		p.stalled = false
		close(p.resumed)
	}
}

// Held returns how many accepted connections are waiting, unforwarded, for
// Resume. Tests wait on it to know a client has reached the hung server.
// A client that gave up stays counted: the proxy reads nothing, so it
// cannot tell.
func (p *StallProxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Close stops accepting, closes every held and forwarded connection (their
// clients see the connection end) and waits for the proxy's goroutines. It
// is safe to call more than once.
func (p *StallProxy) Close() error {
	p.mu.Lock()
	if p.ctx.Err() != nil {
		p.mu.Unlock()
		return nil
	}
	p.cancel()
	for c := range p.conns {
		_ = c.Close() // dropping; the client is told by the closed socket
	}
	p.mu.Unlock()
	err := p.l.Close()
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("closing the stall proxy: %w", err)
	}
	return nil
}

func (p *StallProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return // closed by Close
		}
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.wg.Go(func() { p.forward(c) })
	}
}

// track registers c to be closed by Close, or refuses it once Close has
// begun.
func (p *StallProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *StallProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close() // the forward is over either way
}

// forward holds c while stalled, then relays it to the backend both ways.
func (p *StallProxy) forward(c net.Conn) {
	defer p.untrack(c)
	if !p.hold() {
		return
	}
	var d net.Dialer
	b, err := d.DialContext(p.ctx, "tcp", p.backend)
	if err != nil {
		return // the client sees its connection close, as with a dead backend
	}
	if !p.track(b) {
		_ = b.Close()
		return
	}
	defer p.untrack(b)
	var both sync.WaitGroup
	both.Go(func() { p.pipe(b, c) })
	p.pipe(c, b)
	both.Wait()
}

// hold waits, counted in Held, until the proxy is not stalled. It reports
// false when Close came first.
func (p *StallProxy) hold() bool {
	p.mu.Lock()
	if !p.stalled {
		p.mu.Unlock()
		return p.ctx.Err() == nil
	}
	p.held++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.held--
		p.mu.Unlock()
	}()
	return p.wait() == nil
}

// wait returns once the proxy is not stalled, or an error once it is
// closing.
func (p *StallProxy) wait() error {
	for {
		p.mu.Lock()
		stalled, resumed := p.stalled, p.resumed
		p.mu.Unlock()
		if !stalled {
			return p.ctx.Err()
		}
		select {
		case <-resumed:
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
}

// pipe copies src to dst, checking before each write that the proxy is not
// stalled. At src's EOF it half-closes dst, so a client that shuts down its
// sending side (as git's SSH client does) is seen by the backend; on any
// other end it closes both, which ends the other direction too.
func (p *StallProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if p.wait() != nil {
				break
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if errors.Is(err, io.EOF) {
			if cw, ok := dst.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite() // the other direction still decides when to end
				return
			}
		}
		if err != nil {
			break
		}
	}
	_ = src.Close()
	_ = dst.Close()
}

// StallProxyFor starts a StallProxy in front of the server's HTTP port,
// or, for TransportSSH, its SSH port. Requests through it are counted as
// any others.
func (g *GitServer) StallProxyFor(t Transport) (*StallProxy, error) {
	switch t {
	case TransportHTTP:
		return NewStallProxy(strings.TrimPrefix(g.srv.HTTPAddress(), "http://"))
	case TransportSSH:
		return NewStallProxy(g.front.Addr())
	default:
		return nil, fmt.Errorf("unknown git transport %q", t)
	}
}

// StalledHTTPURL returns repo's HTTP clone URL through p, a proxy from
// StallProxyFor(TransportHTTP). The credentials are the server's.
func (g *GitServer) StalledHTTPURL(p *StallProxy, repo string) string {
	return "http://" + p.Addr() + "/" + strings.TrimPrefix(repo, "/")
}

// StalledSSHURL returns repo's SSH clone URL through p, a proxy from
// StallProxyFor(TransportSSH). Clients need KnownHostsAt(p.Addr()).
func (g *GitServer) StalledSSHURL(p *StallProxy, repo string) string {
	return "ssh://git@" + p.Addr() + "/" + strings.TrimPrefix(repo, "/")
}
