package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/metrics"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/propose"
	"github.com/reflux-dev/reflux/reverse/writeback"
)

// Options wire reflux's controllers into a manager. The manager binary and
// the end-to-end tests share this one wiring.
type Options struct {
	// Concurrent is the number of parallel reconciles per controller and
	// of live-event workers.
	Concurrent int
	// Events records Kubernetes events and forwards them to Flux's
	// notification-controller.
	Events EventRecorder
	// Handler receives changed drift sets. Nil writes signed branches with
	// reverse/propose, keeping clones in GitCacheDir.
	Handler reverse.Handler
	// GitCacheDir keeps one clone per repository between write-backs.
	GitCacheDir string
	// AllowInsecureHTTP lets write-back push over plain http://, for test
	// environments only.
	AllowInsecureHTTP bool
	// Audit, when set, attributes changes to users from audit events.
	Audit *audit.Store
	// AllowedManagers are field managers whose writes are never drift, in
	// addition to drift.DefaultAllowedManagers (the control plane, an
	// autoscaler, Flux and reflux).
	AllowedManagers []string
	// Fetcher downloads source artifacts; Flux's archive fetcher if nil.
	Fetcher desired.Fetcher
	// PolicyRetry and ArtifactRetry are how soon a policy waiting on its
	// Secret, and a Kustomization waiting on its artifact, are retried.
	PolicyRetry, ArtifactRetry time.Duration
	// Registerer takes reflux's metrics; nil skips registration.
	Registerer prometheus.Registerer
	Log        logr.Logger
}

// Setup registers every reflux controller with mgr and returns the live
// engine (for tests and benchmarks to observe).
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) (*Engine, error) {
	if opts.Concurrent < 1 {
		opts.Concurrent = 1
	}
	recorder := metrics.NewRecorder()
	driftMetrics := NewDriftMetrics()
	if opts.Registerer != nil {
		for _, c := range append(recorder.Collectors(), driftMetrics.Collectors()...) {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("registering metrics: %w", err)
			}
		}
	}
	policies := &ReverseSyncPolicyReconciler{
		Client: mgr.GetClient(), Metrics: runtimectrl.NewMetrics(mgr, recorder), RetryInterval: opts.PolicyRetry,
	}
	if err := policies.SetupWithManager(ctx, mgr, ReverseSyncPolicyReconcilerOptions{MaxConcurrentReconciles: opts.Concurrent}); err != nil {
		return nil, fmt.Errorf("setting up ReverseSyncPolicy controller: %w", err)
	}
	engine, err := newEngine(mgr, opts, driftMetrics)
	if err != nil {
		return nil, err
	}
	fetcher := opts.Fetcher
	if fetcher == nil {
		fetcher = desired.NewFetcher(3, 256<<20, 1<<30)
	}
	handler := opts.Handler
	if handler == nil {
		if handler, err = newProposer(opts); err != nil {
			return nil, err
		}
	}
	ks := &KustomizationReconciler{
		Client: mgr.GetClient(), Engine: engine, Watcher: engine.Watcher, Desired: desired.NewCache(fetcher),
		Handler: handler, Metrics: driftMetrics, Events: opts.Events, RetryInterval: opts.ArtifactRetry,
	}
	if err := ks.SetupWithManager(mgr, KustomizationReconcilerOptions{MaxConcurrentReconciles: opts.Concurrent}); err != nil {
		return nil, fmt.Errorf("setting up Kustomization controller: %w", err)
	}
	return engine, nil
}

func newEngine(mgr ctrl.Manager, opts Options, m *DriftMetrics) (*Engine, error) {
	allowed := append(drift.DefaultAllowedManagers(), opts.AllowedManagers...)
	detector, err := drift.New(mgr.GetClient(), drift.WithAllowedManagers(allowed...))
	if err != nil {
		return nil, fmt.Errorf("creating drift detector: %w", err)
	}
	dyn, err := dynamic.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	engine := NewEngine(&Engine{
		Client: mgr.GetClient(), Detector: detector, Holder: Holder{Client: mgr.GetClient()},
		Audit: opts.Audit, Metrics: m, Events: opts.Events, Log: opts.Log.WithName("drift"),
	})
	engine.Watcher = NewWatcher(dyn, mgr.GetRESTMapper(), engine.OnLiveChange)
	return engine, nil
}

func newProposer(opts Options) (reverse.Handler, error) {
	dir := opts.GitCacheDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "reflux-git")
	}
	var wbOpts []writeback.Option
	if opts.AllowInsecureHTTP {
		wbOpts = append(wbOpts, writeback.WithInsecureHTTP())
	}
	eng, err := writeback.New(dir, wbOpts...)
	if err != nil {
		return nil, fmt.Errorf("creating write-back engine: %w", err)
	}
	return &propose.Handler{Writer: eng, Log: opts.Log.WithName("writeback")}, nil
}
