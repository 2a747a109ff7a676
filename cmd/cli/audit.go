package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/internal/handover"
)

// auditReceiver serves the audit webhook. Every replica runs it, leader or
// not, so attribution survives a leader change.
type auditReceiver struct {
	server *http.Server
	// l is bound before the manager starts: a port already in use ends
	// reflux at start, before /readyz ever answers, not after it.
	l net.Listener
	// tls serves HTTPS when set: kube-apiserver sends a webhook's bearer
	// token over HTTPS only (client-go drops a kubeconfig's credentials
	// for a plain-HTTP server).
	tls bool
	// listening is begun as the server starts to serve, for the leader
	// lock (cmd/cli/handover.go).
	listening *handover.Listening
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (a *auditReceiver) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (a *auditReceiver) Start(ctx context.Context) error {
	errc := make(chan error, 1)
	a.listening.Begin(time.Now())
	go func() {
		if a.tls {
			// The certificate comes from TLSConfig.GetCertificate.
			errc <- a.server.ServeTLS(a.l, "", "")
			return
		}
		errc <- a.server.Serve(a.l)
	}()
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
func addAuditReceiver(mgr ctrl.Manager, opts *ManagerOptions, listening *handover.Listening, log logr.Logger) (*audit.Store, *audit.Senders, error) {
	if opts.AuditAddr == "" {
		return nil, nil, nil
	}
	if (opts.AuditTLSCertFile == "") != (opts.AuditTLSKeyFile == "") {
		return nil, nil, errors.New("--audit-tls-cert-file and --audit-tls-key-file go together")
	}
	serveTLS := opts.AuditTLSCertFile != ""
	if opts.AuditTokenFile != "" && !serveTLS {
		// A token over plain HTTP is never sent, so every batch would
		// be refused: say so at start, not at every batch.
		return nil, nil, errors.New("--audit-token-file needs --audit-tls-cert-file and --audit-tls-key-file: " +
			"kube-apiserver sends its audit webhook's bearer token over HTTPS only")
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
	if serveTLS {
		// Reloaded when the files change, as a cert-manager Secret
		// mounted into the pod is renewed.
		certs, err := certwatcher.New(opts.AuditTLSCertFile, opts.AuditTLSKeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("loading the audit webhook's TLS certificate: %w", err)
		}
		if err := mgr.Add(certs); err != nil {
			return nil, nil, fmt.Errorf("adding the audit webhook's certificate watcher: %w", err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
	}
	l, err := net.Listen("tcp", opts.AuditAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("listening for the audit webhook (--audit-addr): %w", err)
	}
	if err := mgr.Add(&auditReceiver{server: srv, l: l, tls: serveTLS, listening: listening}); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("adding audit webhook server: %w", err), l.Close())
	}
	return store, senders, nil
}

// registerAuditMetrics exports what the audit store holds, so that its
// bounds under a flood are seen, not assumed (issue 22 §2): the writes it
// remembers, at most audit.DefaultMaxWrites, and those it dropped early
// because it was full; and the same of the writes to kinds not watched,
// kept apart within audit.DefaultMaxRefused.
func registerAuditMetrics(reg prometheus.Registerer, store *audit.Store) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "reflux_audit_writes",
			Help: fmt.Sprintf("Writes the audit webhook remembers for attribution (at most %d).", audit.DefaultMaxWrites)},
			func() float64 { return float64(store.Writes()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "reflux_audit_evicted_total",
			Help: "Writes the audit webhook dropped before their TTL because its store was full."},
			func() float64 { return float64(store.Evicted()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "reflux_audit_unwatched_writes",
			Help: fmt.Sprintf("Writes to kinds not watched (yet) the audit webhook remembers apart (at most %d).",
				audit.DefaultMaxRefused)},
			func() float64 { n, _ := store.Unwatched(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "reflux_audit_unwatched_evicted_total",
			Help: "Writes to kinds not watched the audit webhook dropped before their TTL because their bound was full."},
			func() float64 { _, n := store.Unwatched(); return float64(n) }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering audit metrics: %w", err)
		}
	}
	return nil
}
