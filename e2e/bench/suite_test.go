package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/refluxtest"
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
	scheme, err := manager.NewScheme()
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
		_ = testenv.DumpFiles(os.Stdout, 256<<10, logPath)
	}
	return code
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
	requests = newRequestCounter()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 50, 300
	cfg.Wrap(requests.wrap)
	r, err := refluxtest.Start(refluxtest.Options{Config: cfg, LogPath: logPath,
		Controllers: manager.Options{Concurrent: 4}})
	if err != nil {
		return nil, err
	}
	return r.Stop, nil
}
