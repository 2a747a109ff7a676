package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	// sideIdleWindow is the no-drift measurement window: two of
	// kustomize-controller's 1m intervals, so each Kustomization
	// reconciles about twice in it.
	sideIdleWindow = 2 * time.Minute
	// sideReadyTimeout bounds reflux's start until every Kustomization
	// reports NoDrift.
	sideReadyTimeout = 15 * time.Minute
	// writebacksMetric counts reflux's write-back runs by result.
	writebacksMetric = "reflux_writeback_total"
)

// BenchmarkSideBySide runs reflux beside the real kustomize-controller on
// each case's tree (see the package doc and tree_test.go) and reports:
//
//   - flux-revert-s-mean: kustomize-controller's time to revert a live
//     edit at a 1m interval, from the edit's acknowledgement to a watch
//     seeing git's value again (1,000-object case, five edits, each in its
//     own Kustomization);
//   - reflux-hold-ms-p50, reflux-record-ms-p50 (and -max): reflux's time
//     from the same acknowledgement to the hold, and to a Held Drift
//     record with the edited value (twenty edits);
//   - revert-over-record: how many times longer kustomize-controller takes;
//   - flux-req-per-min, reflux-req-per-min: each process's own
//     rest_client_requests_total over a 2-minute window with nothing
//     drifted and both running;
//   - reflux-cpu-pct, reflux-rss-mib, reflux-rss-peak-mib: reflux's
//     processor time over that window, in percent of one core, and its
//     memory after it;
//   - burst-*: 1,000 live edits sent 150 at a time across 10
//     Kustomizations (5,000-object case): how long sending took, the
//     commits on reflux's branches, write-back runs, and edits lost live
//     (no hold or no Held record) or in Git (on no branch);
//     burst-held-last-s and burst-recorded-last-s, from the last edit's
//     acknowledgement to the last hold and the last Held record the
//     benchmark's watches saw (issue 20 §3: 5 s and 10 s), and the
//     per-edit p99s; the queue timeline and a CPU profile of the burst go
//     to BENCH_PROFILE_DIR (burst_timeline_test.go);
//   - load-avg: the one-minute load average when the case ends, and
//     load-avg-window at the window's end.
//
// Each case measures once whatever b.N (runCases).
func BenchmarkSideBySide(b *testing.B) {
	runCases(b, sideCases, runSide)
}

// sideRun is one case in progress.
type sideRun struct {
	b      *testing.B
	c      sideCase
	env    *testenv.Env
	wc     client.WithWatch
	reflux *testenv.RefluxProcess
	run    string
	fig    sideFigures
}

func runSide(b *testing.B, c sideCase) {
	r := &sideRun{b: b, c: c, run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	r.env = fixture.NewEnv(b, testenv.Options{StartTimeout: 2 * time.Minute, WaitTimeout: 20 * time.Minute})
	steps := []step{{"Flux applying the tree", r.applyTree}}
	if c.latency {
		steps = append(steps, step{"kustomize-controller reverting edits", r.fluxLatency})
	}
	steps = append(steps, step{"reflux starting", r.startReflux}, step{"both idling", r.idle})
	if c.latency {
		steps = append(steps, step{"reflux noticing edits", r.refluxLatency})
	}
	if c.burst {
		steps = append(steps, step{"the burst", r.burst})
	}
	err := runSteps(context.Background(), steps, &r.fig)
	// What was measured before a failure still counts.
	r.fig.load = loadOrNaN()
	r.fig.report(b, c)
	if err != nil {
		b.Fatal(err)
	}
}

func (r *sideRun) applyTree(ctx context.Context) error {
	var err error
	if r.wc, err = client.NewWithWatch(r.env.Config, client.Options{Scheme: r.env.Scheme}); err != nil {
		return err
	}
	began := time.Now()
	if err := r.c.apply(ctx, r.env, r.c.fluxInterval); err != nil {
		return err
	}
	r.b.Logf("kustomize-controller applied %d objects in %s", r.c.objects, time.Since(began).Round(time.Millisecond))
	// Every drifted field is held and written to a needs-decision branch.
	return r.env.Client.Create(ctx, policy(false))
}

func (r *sideRun) fluxLatency(ctx context.Context) error {
	var err error
	r.fig.fluxRevert, err = fluxReverts(ctx, r.wc, r.c.fluxTargets(), r.run)
	return err
}

func (r *sideRun) startReflux(ctx context.Context) error {
	began := time.Now()
	r.reflux = fixture.StartReflux(r.b, r.env, fixture.Options{AsDeployed: true, StartTimeout: 5 * time.Minute,
		// The test git server speaks plain HTTP on loopback.
		Args: append([]string{"--insecure-allow-http"}, strings.Fields(os.Getenv(refluxArgsEnv))...)})
	if err := waitNoDrift(ctx, r.env, r.c, sideReadyTimeout); err != nil {
		return fmt.Errorf("waiting for NoDrift on every Kustomization: %w", err)
	}
	r.b.Logf("reflux reported NoDrift everywhere %s after it started", time.Since(began).Round(time.Millisecond))
	return nil
}

// idle lets reflux finish its start, then reads both processes' request
// counters and reflux's processor time across sideIdleWindow.
func (r *sideRun) idle(ctx context.Context) error {
	if _, quiet, err := waitQuiet(ctx, r.reflux.Process, time.Minute); err != nil {
		return err
	} else if !quiet {
		r.b.Logf("reflux not quiet for %s within a minute of NoDrift; the window opens anyway", quietFor)
	}
	before, err := r.sample(ctx)
	if err != nil {
		return err
	}
	timer := time.NewTimer(sideIdleWindow)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	after, err := r.sample(ctx)
	if err != nil {
		return err
	}
	minutes := after.at.Sub(before.at).Minutes()
	r.fig.fluxReqPerMin = (after.flux - before.flux) / minutes
	r.fig.refluxReqPerMin = (after.reflux - before.reflux) / minutes
	r.fig.cpuPct = 100 * float64(after.cpu-before.cpu) / float64(after.at.Sub(before.at))
	if r.fig.rss, err = r.reflux.RSS(); err != nil {
		return err
	}
	if r.fig.peak, err = r.reflux.PeakRSS(); err != nil {
		return err
	}
	r.fig.loadWindow = loadOrNaN()
	return nil
}

// usage is one reading of both processes' counters.
type usage struct {
	at           time.Time
	flux, reflux float64
	cpu          time.Duration
}

func (r *sideRun) sample(ctx context.Context) (usage, error) {
	u := usage{at: time.Now()}
	var err error
	if u.flux, err = requests(ctx, r.env.KustomizeController); err != nil {
		return u, err
	}
	if u.reflux, err = requests(ctx, r.reflux.Process); err != nil {
		return u, err
	}
	u.cpu, err = r.reflux.CPUTime()
	return u, err
}

// writebacks is reflux's write-back runs so far. The counter has no series
// until the first run, so its absence counts as none.
func writebacks(ctx context.Context, p *testenv.Process) (float64, error) {
	m, err := p.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	n, _ := m.Sum(writebacksMetric)
	return n, nil
}

func (r *sideRun) refluxLatency(ctx context.Context) error {
	var err error
	r.fig.refluxHold, r.fig.refluxRecord, err = refluxNotices(ctx, r.wc, r.c.refluxTargets(), r.run)
	return err
}

// refluxArgsEnv adds flags to reflux's command line in BenchmarkSideBySide,
// to measure a setting beside its default in the same tree (for example
// BENCH_REFLUX_ARGS="--kube-api-qps=50 --kube-api-burst=300").
const refluxArgsEnv = "BENCH_REFLUX_ARGS"

// burstFluxInterval is kustomize-controller's interval during the burst.
// At 1m it reverts the edits reflux has not held yet: reflux works through
// 1,000 edits at its client's rate limit (Flux's defaults, 50 QPS and a
// burst of 300, about four requests an edit), so Flux would be racing it,
// and what the burst counts is reflux's coalescing, not that race.
const burstFluxInterval = time.Hour

// burstProfileSeconds is how long the burst's CPU profile runs, from just
// before the first edit: the burst's send, its holds and its records.
const burstProfileSeconds = 30

func (r *sideRun) burst(ctx context.Context) error {
	targets := r.c.burstTargets()
	if err := r.slowFlux(ctx, burstFluxInterval); err != nil {
		return err
	}
	wb0, err := writebacks(ctx, r.reflux.Process)
	if err != nil {
		return err
	}
	pushes0 := r.env.Git.Requests(treeRepo).ReceivePack
	// The burst's own client must not be what spreads it out: with the
	// admin client's rate limit, 1,000 edits took 18.7 s in the first run.
	cfg := rest.CopyConfig(r.env.Config)
	cfg.QPS, cfg.Burst = burstEdits, burstEdits
	editor, err := client.New(cfg, client.Options{Scheme: r.env.Scheme})
	if err != nil {
		return err
	}
	// The benchmark's own watches time each edit to its hold and to its
	// Held record; a sampler reads reflux's queues beside them, and a CPU
	// profile covers the burst: where its time goes.
	obsCtx, stopObs := context.WithCancel(ctx)
	defer stopObs()
	obs, err := startObserver(obsCtx, r.env.Config, r.env.Scheme)
	if err != nil {
		return err
	}
	if err := obs.watchEdits(obsCtx, &corev1.ConfigMap{}); err != nil {
		return err
	}
	edits := make([]*edit, len(targets))
	for e, t := range targets {
		edits[e] = obs.expect(t, burstValue(r.run, e))
	}
	served0, err := apiserverRequests(ctx, r.env.Config)
	if err != nil {
		return err
	}
	began := time.Now()
	stopSampling := make(chan struct{})
	waitSampling := background(func() { r.fig.burstTimeline = timeline(obsCtx, r.reflux.Process, obs, began, stopSampling) })
	waitProfile := background(func() {
		path, err := cpuProfile(obsCtx, r.reflux.Process, burstProfileSeconds, profileDir())
		if err != nil {
			r.b.Logf("no CPU profile of the burst: %v", err)
			return
		}
		r.b.Logf("CPU profile of reflux over the burst's first %ds: %s (go tool pprof -top %s)", burstProfileSeconds, path, path)
	})
	defer waitProfile()
	waitAPIProfile := background(func() {
		path, err := apiserverProfile(obsCtx, r.env.Config, burstProfileSeconds, profileDir())
		if err != nil {
			r.b.Logf("no CPU profile of the apiserver over the burst: %v", err)
			return
		}
		r.b.Logf("CPU profile of the kube-apiserver over the burst's first %ds: %s", burstProfileSeconds, path)
	})
	defer waitAPIProfile()
	r.fig.burstSend, err = burst(ctx, editor, targets, r.run, func(e int, at time.Time) { obs.acknowledged(edits[e], at) })
	if err != nil {
		close(stopSampling)
		waitSampling()
		return err
	}
	sent := time.Now()
	r.fig.burstEdits = burstOutcomes(ctx, obs, edits, burstTimeout)
	served1, err := apiserverRequests(ctx, r.env.Config)
	if err != nil {
		return err
	}
	r.b.Logf("the apiserver served, from the first edit until every edit was held and recorded: %s",
		formatRequests(requestsBetween(served0, served1, 10)))
	close(stopSampling)
	waitSampling()
	if r.fig.burstLostLive, err = burstLive(ctx, r.env.Client, targets, r.run); err != nil {
		return err
	}
	r.fig.burstLive = time.Since(sent)
	r.fig.burstGit, err = burstGit(ctx, filepath.Join(r.env.Git.Root(), treeRepo), r.c.tree, targets, r.run)
	if err != nil {
		return err
	}
	r.fig.burstInGit = time.Since(sent)
	r.fig.burstPushes = r.env.Git.Requests(treeRepo).ReceivePack - pushes0
	wb1, err := writebacks(ctx, r.reflux.Process)
	r.fig.burstWritebacks = wb1 - wb0
	r.fig.burstRan = true
	return err
}

// slowFlux sets every Kustomization's interval and waits until
// kustomize-controller has reconciled the new generation.
func (r *sideRun) slowFlux(ctx context.Context, interval time.Duration) error {
	for k := range r.c.kustomizations {
		ks := &kustomizev1.Kustomization{}
		if err := r.env.Client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: ksName(k)}, ks); err != nil {
			return err
		}
		patch := client.MergeFrom(ks.DeepCopy())
		ks.Spec.Interval = metav1.Duration{Duration: interval}
		if err := r.env.Client.Patch(ctx, ks, patch); err != nil {
			return err
		}
		if err := r.env.WaitForReady(ctx, ks); err != nil {
			return err
		}
	}
	return nil
}

// waitNoDrift polls until every Kustomization of the case is Ready and
// reports Drifted=False NoDrift.
func waitNoDrift(ctx context.Context, env *testenv.Env, c sideCase, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var list kustomizev1.KustomizationList
		if err := env.Client.List(ctx, &list, client.InNamespace(fluxNS), client.MatchingLabels{treeLabel: "tree"}); err != nil {
			return false, err
		}
		clean := 0
		for _, ks := range list.Items {
			d := apimeta.FindStatusCondition(ks.Status.Conditions, refluxv1.DriftedCondition)
			r := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			if strings.HasPrefix(fixture.Describe(d), fixture.Clean) && r != nil && r.Status == metav1.ConditionTrue {
				clean++
			}
		}
		return clean == c.kustomizations, nil
	})
}
