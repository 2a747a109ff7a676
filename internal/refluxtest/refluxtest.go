// Package refluxtest runs reflux inside a test process, wired as `reflux
// manager` wires it (manager.Setup, Flux's events recorder, the same
// cache and client options), against a testenv environment. End-to-end
// suites share it so that each starts reflux the same way; tests that must
// prove the installed binary use testenv's process helper instead.
package refluxtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/fluxcd/pkg/runtime/events"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// Options configure one in-process reflux.
type Options struct {
	// Config connects to the apiserver; required.
	Config *rest.Config
	// LogPath is where reflux logs, appended to; required.
	LogPath string
	// Debug logs at debug level.
	Debug bool
	// Selector is the shard's --watch-label-selector; nil for all.
	Selector labels.Selector
	// Controllers is the wiring; Log, Registerer and Events are filled in.
	Controllers manager.Options
}

// Reflux is one running reflux.
type Reflux struct {
	Governor *governor.Governor
	// Registry holds its metrics.
	Registry *prometheus.Registry
	stop     func()
}

// Stop stops it and waits until its manager returned.
func (r *Reflux) Stop() { r.stop() }

// skipNameValidation lets a test run a second manager (a restart, a
// second shard) in one process; separate processes never need it.
var skipNameValidation = true

// Start starts reflux and returns once its manager runs.
func Start(opts Options) (*Reflux, error) {
	if opts.Config == nil || opts.LogPath == "" {
		return nil, errors.New("refluxtest: Config and LogPath are required")
	}
	f, err := os.OpenFile(opts.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	level := slog.LevelInfo
	if opts.Debug {
		level = slog.LevelDebug
	}
	log := logr.FromSlogHandler(slog.NewTextHandler(f, &slog.HandlerOptions{Level: level}))
	ctrl.SetLogger(log)
	scheme, err := manager.NewScheme()
	if err != nil {
		f.Close()
		return nil, err
	}
	mgr, err := ctrl.NewManager(opts.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Logger: log, Controller: config.Controller{SkipNameValidation: &skipNameValidation},
		Cache:  manager.CacheOptions(opts.Controllers.WatchNamespace, opts.Selector),
		Client: manager.ClientOptions(),
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	recorder, err := events.NewRecorder(mgr, log, "", "reflux")
	if err != nil {
		f.Close()
		return nil, err
	}
	registry := prometheus.NewRegistry()
	copts := opts.Controllers
	copts.Log, copts.Registerer, copts.WatchSelector = log, registry, opts.Selector
	if copts.Events == nil {
		copts.Events = recorder
	}
	if copts.RecordKey == nil {
		// As `reflux manager` does, so that a restarted reflux, and the
		// shards beside it, share the key and so each other's records.
		if copts.RecordKey, err = loadRecordKey(opts.Config, scheme); err != nil {
			f.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	gov, err := manager.Setup(ctx, mgr, copts)
	if err != nil {
		cancel()
		f.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			log.Error(err, "manager stopped")
		}
	}()
	return &Reflux{Governor: gov, Registry: registry, stop: func() { cancel(); <-done; f.Close() }}, nil
}

// RecordKeySecret is where the in-process reflux keeps its record key:
// where `reflux manager` keeps it by default.
var RecordKeySecret = types.NamespacedName{Namespace: "reflux-system", Name: "reflux-record-key"}

func loadRecordKey(cfg *rest.Config, scheme *runtime.Scheme) ([]byte, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// config/default creates the namespace; an environment that did not
	// install it gets it here (reflux itself may not create namespaces).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: RecordKeySecret.Namespace}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns); apierrors.IsNotFound(err) {
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating namespace %s for the record key: %w", ns.Name, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("reading namespace %s for the record key: %w", ns.Name, err)
	}
	return manager.LoadRecordKey(ctx, c, RecordKeySecret)
}
