package bench

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/events"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reflux-dev/reflux/controllers"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	fleetNS   = "fleet"
	fleetRepo = "fleet.git"
	// fleetLabel selects the fleet's Kustomizations for the policy.
	fleetLabel = "reflux.dev/bench"
	// waitTimeout bounds every readiness wait. Flux applies 1,000 objects
	// and reflux dry-runs each once at start; a 2-core machine needs far
	// less, but a slow one must not fail the run.
	waitTimeout = 10 * time.Minute
)

var (
	env      *testenv.Env
	requests *requestCounter
	watch    *observer
	logPath  string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts the environment only when a benchmark is asked for: setting
// up the fleet takes a minute, and this package has no tests.
func run(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		return m.Run()
	}
	ctx := context.Background()
	scheme, err := controllers.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(ctx, testenv.Options{Scheme: scheme, WaitTimeout: waitTimeout})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	logPath = filepath.Join(env.Dir, "reflux.log")
	if p := os.Getenv("REFLUX_BENCH_LOG"); p != "" {
		logPath = p // kept after the run, to explain its numbers
	}
	code := 1
	stop, err := setup(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "setting up the fleet:", err)
	} else {
		code = m.Run()
		stop()
	}
	if code != 0 {
		_ = env.DumpLogs(os.Stdout, 256<<10)
		if raw, err := os.ReadFile(logPath); err == nil {
			fmt.Printf("===== reflux log (%s) =====\n%s\n", logPath, tail(raw, 256<<10))
		}
	}
	return code
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// setup pushes the fleet, lets Flux apply it, starts reflux and the
// benchmark's own watches, and waits until reflux reports every
// Kustomization clean. It returns the function that stops reflux and the
// watches.
func setup(ctx context.Context) (func(), error) {
	kss, err := applyFleet(ctx)
	if err != nil {
		return nil, err
	}
	stopReflux, err := startReflux()
	if err != nil {
		return nil, err
	}
	watchCtx, cancel := context.WithCancel(ctx)
	stop := func() { cancel(); stopReflux() }
	if watch, err = startObserver(watchCtx, env.Config, env.Scheme); err != nil {
		stop()
		return nil, err
	}
	if err := waitClean(ctx, kss); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// startReflux starts reflux in-process with the wiring and the client
// defaults of `reflux manager` (4 workers, Flux's 50 QPS and burst 300),
// on a connection whose requests are counted.
func startReflux() (func(), error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	log := logr.FromSlogHandler(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctrl.SetLogger(log)
	requests = newRequestCounter()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 50, 300
	cfg.Wrap(requests.wrap)
	scheme, err := controllers.NewScheme()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Logger: log,
		Client: ctrlclient.Options{Cache: &ctrlclient.CacheOptions{DisableFor: []ctrlclient.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return nil, err
	}
	recorder, err := events.NewRecorder(mgr, log, "", "reflux")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := controllers.Setup(ctx, mgr, controllers.Options{
		Concurrent: 4, Events: recorder, Registerer: prometheus.NewRegistry(), Log: log,
	}); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			log.Error(err, "manager stopped")
		}
	}()
	return func() { cancel(); <-done; f.Close() }, nil
}
