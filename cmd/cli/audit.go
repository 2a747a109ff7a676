package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reflux-dev/reflux/internal/audit"
)

// auditReceiver serves the audit webhook. Every replica runs it, leader or
// not, so attribution survives a leader change.
type auditReceiver struct {
	server *http.Server
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (a *auditReceiver) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (a *auditReceiver) Start(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- a.server.ListenAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("audit webhook server: %w", err)
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.server.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// addAuditReceiver serves the audit webhook for the hub's apiserver and,
// told apart by their tokens, the remote clusters'.
func addAuditReceiver(mgr ctrl.Manager, opts *ManagerOptions, log logr.Logger) (*audit.Store, *audit.Senders, error) {
	if opts.AuditAddr == "" {
		return nil, nil, nil
	}
	token := ""
	if opts.AuditTokenFile != "" {
		raw, err := os.ReadFile(opts.AuditTokenFile)
		if err != nil {
			return nil, nil, fmt.Errorf("reading --audit-token-file: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	store, senders := audit.NewStore(), audit.NewSenders()
	mux := http.NewServeMux()
	mux.Handle("/audit", &audit.Handler{Store: store, Token: token, Senders: senders, Log: log.WithName("audit")})
	srv := &http.Server{Addr: opts.AuditAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := mgr.Add(&auditReceiver{server: srv}); err != nil {
		return nil, nil, fmt.Errorf("adding audit webhook server: %w", err)
	}
	return store, senders, nil
}
