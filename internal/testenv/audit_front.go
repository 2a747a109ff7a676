package testenv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// auditFront holds the address kube-apiserver sends its audit events to
// (Env.AuditWebhookAddr) for the environment's whole life, and forwards
// each connection, bytes as they are, TLS included, to the receiver
// routed to it (Env.RouteAudit).
//
// The apiserver learns the address once, at start, and the receiver, a
// reflux, starts later. A port only reserved and let go in between can be
// taken by any process of another test package running meanwhile; that
// reflux then cannot listen, and CI saw a whole suite's reflux exit that
// way. Held here, the address is never free, and each reflux start
// listens on a port of its own, which a restart may pick afresh.
type auditFront struct {
	l  net.Listener
	wg sync.WaitGroup

	mu      sync.Mutex
	backend string
	closed  bool
	conns   map[net.Conn]struct{}
}

// listenAuditFront listens on a free loopback port and starts forwarding;
// until a receiver is routed, it closes what it accepts, as a refused
// connection would end: the apiserver retries the batch.
func listenAuditFront() (*auditFront, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the audit webhook: %w", err)
	}
	f := &auditFront{l: l, conns: map[net.Conn]struct{}{}}
	f.wg.Go(f.serve)
	return f, nil
}

func (f *auditFront) addr() string { return f.l.Addr().String() }

// route sends the connections accepted from now on to backend.
func (f *auditFront) route(backend string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backend = backend
}

func (f *auditFront) serve() {
	for {
		c, err := f.l.Accept()
		if err != nil {
			return // closed
		}
		f.mu.Lock()
		backend, closed := f.backend, f.closed
		if !closed {
			f.conns[c] = struct{}{}
		}
		f.mu.Unlock()
		if closed || backend == "" {
			_ = c.Close() // nobody to receive it yet
			if closed {
				return
			}
			continue
		}
		f.wg.Go(func() { f.forward(c, backend) })
	}
}

func (f *auditFront) forward(c net.Conn, backend string) {
	defer func() {
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
		_ = c.Close()
	}()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return // the receiver is down or restarting: the apiserver retries
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		_ = b.Close()
		return
	}
	f.conns[b] = struct{}{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, b)
		f.mu.Unlock()
		_ = b.Close()
	}()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // ends when either side closes
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(b, c)
	go pipe(c, b)
	<-done
	<-done
}

// close stops accepting, ends every forwarded connection and waits for
// the forwarding to end.
func (f *auditFront) close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	err := f.l.Close()
	f.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("closing the audit webhook's address: %w", err)
	}
	return nil
}

// RouteAudit makes the environment's audit webhook address,
// Env.AuditWebhookAddr, forward to addr, a receiver listening on
// loopback. StartReflux with RefluxOptions.AuditWebhook routes it to the
// reflux it starts; a test's own receiver routes it itself.
func (e *Env) RouteAudit(addr string) error {
	if e.cp == nil || e.cp.audit.front == nil {
		return errors.New("the environment reserved no audit webhook address: set Options.AuditWebhook without a URL")
	}
	e.cp.audit.front.route(addr)
	return nil
}
