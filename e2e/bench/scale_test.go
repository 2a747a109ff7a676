package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	// fluxApplyTimeout bounds kustomize-controller's apply of a whole
	// case: 10,000 objects in one Kustomization took it about 5 minutes
	// on a 2-core machine.
	fluxApplyTimeout = 30 * time.Minute
	// scaleReadyTimeout bounds reflux's start until every Kustomization
	// reports NoDrift.
	scaleReadyTimeout = 30 * time.Minute
	// settleTimeout bounds each wait for reflux to go quiet.
	settleTimeout = 5 * time.Minute
	// scaleIdleWindow is the measurement window of idle processor time.
	scaleIdleWindow = 60 * time.Second
	// revisions is how many revisions Flux applies per Kustomization in a
	// case: the tree is pushed once.
	revisions = 1
	// buildsMetric counts reflux's renders of applied revisions.
	buildsMetric = "reflux_render_builds_total"
)

// BenchmarkScale measures reflux governing ever larger trees. Each case
// runs in a fresh environment (see the package doc) and reports:
//
//   - flux-apply-s: kustomize-controller building and applying the tree,
//     from the Kustomizations' creation to the last one Ready with its
//     applied revision written (the yardstick reflux is read against);
//   - reflux-ready-s: from starting `reflux manager` to every
//     Kustomization reporting Drifted=False NoDrift;
//   - idle-cpu-pct: reflux's processor time over the next 60 s idle
//     window, in percent of one core; then rss-mib and rss-peak-mib
//     (VmRSS and VmHWM);
//   - hold-p50-ms, hold-p99-ms, record-p50-ms, record-p99-ms: from a live
//     edit's acknowledgement to the hold annotation, and to its Held Drift
//     record, as the benchmark's watches see them, over the edits seen
//     within 2 minutes; lost counts the edits that missed either;
//   - requests/change: reflux's own rest_client_requests_total across the
//     edits, from quiet before to quiet after, per edit;
//   - builds/revision: reflux_render_builds_total per Kustomization and
//     applied revision, when reflux exports it;
//   - load-avg-start and load-avg: the machine's one-minute load average
//     when the case's window opens and when it closes; case-s, the case's
//     whole wall time.
//
// Each case is one measurement, whatever b.N (runCases). ns/op is
// reported as 0: case-s is the case's time.
func BenchmarkScale(b *testing.B) {
	runCases(b, scaleCases, runScale)
}

// scaleCases are BenchmarkScale's trees, in the order they run: a
// Deployment in every fifty objects, at least one per Kustomization.
var scaleCases = []tree{
	{prefix: "scale", objects: 1000, kustomizations: 20, deployments: 1},
	{prefix: "scale", objects: 10000, kustomizations: 100, deployments: 2},
	{prefix: "scale", objects: 10000, kustomizations: 1, deployments: 200},
}

// scaleRun is one case in progress.
type scaleRun struct {
	b      *testing.B
	c      tree
	env    *testenv.Env
	obs    *observer
	reflux *testenv.RefluxProcess
	fig    scaleFigures
}

func runScale(b *testing.B, c tree) {
	began := time.Now()
	r := &scaleRun{b: b, c: c}
	r.env = fixture.NewEnv(b, testenv.Options{StartTimeout: 2 * time.Minute, WaitTimeout: fluxApplyTimeout})
	err := runSteps(context.Background(), []step{
		{"Flux applying the tree", r.applyTree},
		{"reflux starting", r.startReflux},
		{"reflux idling", r.idle},
		{"live edits", r.edit},
		{"reflux settling", r.settle},
	}, &r.fig)
	if err != nil {
		b.Fatal(err)
	}
	r.fig.total = time.Since(began)
	r.fig.report(b)
}

// applyTree pushes the tree, creates the Kustomizations and times Flux
// applying them, then creates the policy and the benchmark's own watches.
func (r *scaleRun) applyTree(ctx context.Context) error {
	watchCtx, cancel := context.WithCancel(ctx)
	r.b.Cleanup(cancel)
	var err error
	if r.obs, err = startObserver(watchCtx, r.env.Config, r.env.Scheme); err != nil {
		return err
	}
	if err := r.c.push(ctx, r.env); err != nil {
		return err
	}
	r.fig.loadStart = loadOrNaN()
	created := time.Now()
	// No periodic reconcile, of Flux or of reflux's resync, lands in a case.
	if _, err := r.c.createKustomizations(ctx, r.env, 6*time.Hour); err != nil {
		return err
	}
	last, err := r.obs.waitAll(ctx, r.c.ksNames(), appliedAt, fluxApplyTimeout)
	if err != nil {
		return fmt.Errorf("waiting for kustomize-controller: %w", err)
	}
	r.fig.fluxApply = last.Sub(created)
	r.b.Logf("kustomize-controller applied %d objects in %d Kustomizations in %s",
		r.c.objects, r.c.kustomizations, r.fig.fluxApply.Round(time.Millisecond))
	if err := r.env.Client.Create(ctx, policy(true)); err != nil {
		return err
	}
	return r.obs.watchEdits(watchCtx, &corev1.ConfigMap{})
}

// startReflux starts the reflux binary and times it until every
// Kustomization reports NoDrift.
func (r *scaleRun) startReflux(ctx context.Context) error {
	began := time.Now()
	r.reflux = fixture.StartReflux(r.b, r.env, fixture.Options{AsDeployed: true, StartTimeout: 5 * time.Minute})
	last, err := r.obs.waitAll(ctx, r.c.ksNames(), cleanAt, scaleReadyTimeout)
	if err != nil {
		return fmt.Errorf("waiting for reflux to report NoDrift: %w", err)
	}
	r.fig.refluxReady = last.Sub(began)
	r.b.Logf("reflux reported NoDrift on all %d Kustomizations %s after it started",
		r.c.kustomizations, r.fig.refluxReady.Round(time.Millisecond))
	return nil
}

// idle waits for reflux to go quiet, then measures its processor time over
// scaleIdleWindow and its memory after it.
func (r *scaleRun) idle(ctx context.Context) error {
	began := time.Now()
	req0, quiet, err := waitQuiet(ctx, r.reflux.Process, settleTimeout)
	if err != nil {
		return err
	}
	r.b.Logf("reflux quiet (%v) %s after NoDrift, %.0f requests so far", quiet, time.Since(began).Round(time.Second), req0)
	cpu0, err := r.reflux.CPUTime()
	if err != nil {
		return err
	}
	t0 := time.Now()
	window := time.NewTimer(scaleIdleWindow)
	defer window.Stop()
	select {
	case <-window.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	cpu1, err := r.reflux.CPUTime()
	if err != nil {
		return err
	}
	r.fig.idleCPU = 100 * float64(cpu1-cpu0) / float64(time.Since(t0))
	if r.fig.rss, err = r.reflux.RSS(); err != nil {
		return err
	}
	if r.fig.peak, err = r.reflux.PeakRSS(); err != nil {
		return err
	}
	req1, err := requests(ctx, r.reflux.Process)
	r.b.Logf("idle window: %s processor time, %.0f requests", cpu1-cpu0, req1-req0)
	return err
}

// edit makes the live edits as a user allowed to edit ConfigMaps only.
func (r *scaleRun) edit(ctx context.Context) error {
	role, binding := editorRBAC()
	for _, obj := range []client.Object{role, binding} {
		if err := r.env.Client.Create(ctx, obj); err != nil {
			return err
		}
	}
	user, err := r.env.AddUser(editorName, editorGroup)
	if err != nil {
		return err
	}
	editor, err := client.New(user.Config, client.Options{Scheme: r.env.Scheme})
	if err != nil {
		return err
	}
	if r.fig.requestsBefore, err = requests(ctx, r.reflux.Process); err != nil {
		return err
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	r.fig.edits, err = makeEdits(ctx, editor, r.obs, editTargets(r.c), run)
	return err
}

// settle waits for reflux to go quiet after the edits and reads its
// counters.
func (r *scaleRun) settle(ctx context.Context) error {
	after, quiet, err := waitQuiet(ctx, r.reflux.Process, settleTimeout)
	if err != nil {
		return err
	}
	if !quiet {
		r.b.Logf("reflux still making requests %s after the edits; requests/change includes them", settleTimeout)
	}
	r.fig.requests = after - r.fig.requestsBefore
	r.fig.loadEnd = loadOrNaN()
	m, err := r.reflux.Metrics(ctx)
	if err != nil {
		return err
	}
	if builds, ok := m.Sum(buildsMetric); ok {
		r.fig.buildsPerRevision = builds / float64(r.c.kustomizations*revisions)
		r.fig.buildsKnown = true
	} else {
		r.b.Logf("%s not exported", buildsMetric)
	}
	return nil
}
