package soak

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// auditFanout receives kube-apiserver's audit webhook from the address the
// environment holds and posts every batch to each replica's
// --audit-addr, as a webhook Service in front of both pods whose
// receivers share what they learn would: reflux records a deletion only
// when the audit log says who deleted (kustomize-controller's prunes are
// not drift), and after a failover the new leader must know the writes
// the old one heard of.
type auditFanout struct {
	srv     *http.Server
	targets []string
	client  *http.Client
}

// startAuditFanout receives e's audit webhook (Env.RouteAudit) and
// forwards to targets.
func startAuditFanout(e *testenv.Env, targets []string) (*auditFanout, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if err := e.RouteAudit(l.Addr().String()); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	f := &auditFanout{targets: targets, client: &http.Client{Timeout: 2 * time.Second}}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(l) }() // ends with close
	return f, nil
}

// ServeHTTP forwards one batch to every replica, and answers 200 once
// each has answered or failed: the apiserver's batch webhook is never
// held up by a replica that is down.
func (f *auditFanout) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var wg sync.WaitGroup
	for _, t := range f.targets {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "http://"+t+r.URL.Path, bytes.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
			if resp, err := f.client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body) // draining for reuse
				_ = resp.Body.Close()
			}
		})
	}
	wg.Wait()
	w.WriteHeader(http.StatusOK)
}

func (f *auditFanout) close() error {
	if err := f.srv.Shutdown(context.Background()); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// freeAddrs reserves n loopback addresses: each replica's audit receiver
// keeps its own across restarts, so the fan-out needs no update.
func freeAddrs(n int) ([]string, error) {
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		out = append(out, l.Addr().String())
		if err := l.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
