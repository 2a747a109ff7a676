package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// fleetTimeout bounds every readiness wait of the fleet. Flux applies
// 1,000 objects and reflux dry-runs each once at start; a 2-core machine
// needs far less, but a slow one must not fail the run.
const fleetTimeout = 10 * time.Minute

// fleet is BenchmarkLiveChange's tree: 1,000 objects in 20
// Kustomizations, five Deployments in each.
var fleet = tree{prefix: "bench", objects: 1000, kustomizations: 20, deployments: 5}

var (
	// fleetRequests counts the API requests of the fleet's reflux;
	// fleetWatch sees its edits held and recorded.
	fleetRequests = newRequestCounter()
	fleetWatch    *observer
)

// TestMain builds reflux from the work tree when benchmarks run, so their
// figures are never a stale bin/reflux's. Without -bench only the
// package's tests of its trees and figures run, in seconds: the fleet's
// environment starts at BenchmarkLiveChange's first run (fixture.Shared)
// and serves its later ones; BenchmarkScale and BenchmarkSideBySide start
// one per case.
func TestMain(m *testing.M) {
	fixture.Main(m, nil, fixture.Suite{Lazy: true, Build: true, Setup: setupFleet,
		Env: testenv.Options{WaitTimeout: fleetTimeout}})
}

// setupFleet lets Flux apply the fleet, starts the benchmark's watches and
// reflux, and waits until reflux reports every Kustomization clean.
func setupFleet(ctx context.Context, env *testenv.Env) error {
	if err := fleet.apply(ctx, env, time.Hour); err != nil {
		return err
	}
	if err := env.Client.Create(ctx, policy(true)); err != nil {
		return err
	}
	watchCtx, cancel := context.WithCancel(ctx)
	fixture.Defer(func() error { cancel(); return nil })
	var err error
	if fleetWatch, err = startObserver(watchCtx, env.Config, env.Scheme); err != nil {
		return err
	}
	if err := fleetWatch.watchEdits(watchCtx, &corev1.ConfigMap{}, &appsv1.Deployment{}); err != nil {
		return err
	}
	// As `reflux manager` runs: 4 workers, Flux's client defaults of 50
	// QPS and a burst of 300; its requests pass the counting proxy.
	if _, err := fixture.StartSuiteReflux(ctx, env, fixture.Options{AsDeployed: true, Requests: fleetRequests.wrap}); err != nil {
		return err
	}
	if _, err := fleetWatch.waitAll(ctx, fleet.ksNames(), cleanAt, fleetTimeout); err != nil {
		return fmt.Errorf("waiting for reflux to report the fleet clean: %w", err)
	}
	return nil
}
