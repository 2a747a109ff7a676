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
	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

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
	if err := registerAuditMetrics(crmetrics.Registry, store); err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/audit", &audit.Handler{Store: store, Token: token, Senders: senders, Log: log.WithName("audit")})
	srv := &http.Server{Addr: opts.AuditAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := mgr.Add(&auditReceiver{server: srv}); err != nil {
		return nil, nil, fmt.Errorf("adding audit webhook server: %w", err)
	}
	return store, senders, nil
}

// registerAuditMetrics exports what the audit store holds, so that its
// bound under a flood is seen, not assumed (issue 22 §2): the writes it
// remembers, at most audit.DefaultMaxWrites, and those it dropped early
// because it was full.
func registerAuditMetrics(reg prometheus.Registerer, store *audit.Store) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "reflux_audit_writes",
			Help: fmt.Sprintf("Writes the audit webhook remembers for attribution (at most %d).", audit.DefaultMaxWrites)},
			func() float64 { return float64(store.Writes()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "reflux_audit_evicted_total",
			Help: "Writes the audit webhook dropped before their TTL because its store was full."},
			func() float64 { return float64(store.Evicted()) }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering audit metrics: %w", err)
		}
	}
	return nil
}
