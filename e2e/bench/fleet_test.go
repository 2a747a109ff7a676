package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// BenchmarkFleet (issue 24 §4) measures one hub governing remote
// clusters: a fresh hub (Flux, the git server and the reflux binary) and
// spokes, each a kube-apiserver and etcd of its own with no Flux. For
// each spoke the hub has a namespace holding a kubeconfig Secret for it
// and one Kustomization applying 2,000 ConfigMaps there through
// spec.kubeConfig. It reports:
//
//   - flux-apply-s and reflux-ready-s, as BenchmarkScale does, over all
//     the spokes' Kustomizations;
//   - per spoke N, spokeN-hold-p50-ms, spokeN-hold-p99-ms and
//     spokeN-record-p99-ms: from a live edit in that spoke to the hold
//     annotation there, and to its Held Drift record in the hub, timed
//     as BenchmarkScale times them; hold-p99-ms over every spoke's edits
//     and lost, the edits that missed either within 2 minutes;
//   - spokeN-watches: the watch connections reflux holds open in spoke N
//     after the edits, counted from the spoke's own audit log (started
//     minus completed watch requests of reflux's user agent, as the hub's
//     user);
//   - rss-idle-mib, reflux's VmRSS once quiet before the edits, rss-mib
//     once quiet after them, and rss-peak-mib (VmHWM);
//   - requests/change, load-avg-start and load-avg, case-s and cores.
//
// Like BenchmarkScale's cases it measures once, whatever b.N.
func BenchmarkFleet(b *testing.B) {
	runCases(b, fleetCases, runFleet)
}

// fleetCase is a fleet's shape: one Kustomization per spoke, tree's
// Kustomization k applied to spoke k, and edits live edits in each spoke.
type fleetCase struct {
	tree  tree
	edits int
}

// fleetCases are BenchmarkFleet's fleets: 3 spokes of 2,000 ConfigMaps.
var fleetCases = []fleetCase{
	{tree: tree{prefix: "spoke", objects: 6000, kustomizations: 3}, edits: 50},
}

// name is the sub-benchmark's name, which scripts reading the results key on.
func (c fleetCase) name() string {
	return fmt.Sprintf("spokes=%d/objects-per-spoke=%d", c.spokes(), c.tree.perKs())
}

func (c fleetCase) spokes() int { return c.tree.kustomizations }

// fleetRun is one fleet in progress. Spoke k's hub namespace, its target
// namespace in the spoke and its Kustomization are all tree.namespace(k).
type fleetRun struct {
	b      *testing.B
	c      fleetCase
	hub    *testenv.Env
	spokes []*testenv.Env
	obs    *observer
	reflux *testenv.RefluxProcess
	fig    fleetFigures
}

func runFleet(b *testing.B, c fleetCase) {
	began := time.Now()
	r := &fleetRun{b: b, c: c}
	r.fig.loadStart = loadOrNaN()
	r.hub = fixture.NewEnv(b, testenv.Options{StartTimeout: 2 * time.Minute, WaitTimeout: fluxApplyTimeout})
	err := runSteps(context.Background(), []step{
		{"spokes starting", r.startSpokes},
		{"Flux applying to the spokes", r.applyTrees},
		{"reflux starting", r.startReflux},
		{"reflux idling", r.idle},
		{"live edits in the spokes", r.edit},
		{"reflux settling", r.settle},
	}, &r.fig)
	if err != nil {
		b.Fatal(err)
	}
	r.fig.total = time.Since(began)
	r.fig.report(b)
}

// startSpokes starts the spokes, each with its audit log of reads and
// writes, and a recorder answering its audit webhook: nothing in the
// hub listens for the spokes' audit events.
func (r *fleetRun) startSpokes(ctx context.Context) error {
	for k := range r.c.spokes() {
		spoke, stop, err := startSpoke(ctx)
		if err != nil {
			return err
		}
		r.b.Cleanup(func() {
			if err := stop(); err != nil {
				r.b.Errorf("stopping spoke %d: %v", k, err)
			}
		})
		r.spokes = append(r.spokes, spoke)
		r.fig.spokes = append(r.fig.spokes, spokeFigures{name: r.c.tree.namespace(k)})
	}
	return nil
}

// applyTrees gives each spoke its namespace in both clusters, the hub's
// kubeconfig Secret for it and its Kustomization, and times Flux
// applying them all; then it starts the benchmark's watches of the
// spokes' ConfigMaps and the hub's Drift records.
func (r *fleetRun) applyTrees(ctx context.Context) error {
	watchCtx, cancel := context.WithCancel(ctx)
	r.b.Cleanup(cancel)
	var err error
	if r.obs, err = startObserver(watchCtx, r.hub.Config, r.hub.Scheme); err != nil {
		return err
	}
	created := time.Now()
	for k, spoke := range r.spokes {
		if err := r.createSpokeApp(ctx, k, spoke); err != nil {
			return fmt.Errorf("spoke %d: %w", k, err)
		}
	}
	last, err := r.obs.waitAll(ctx, r.ksNames(), appliedAt, fluxApplyTimeout)
	if err != nil {
		return fmt.Errorf("waiting for kustomize-controller: %w", err)
	}
	r.fig.fluxApply = last.Sub(created)
	r.b.Logf("kustomize-controller applied %d objects to each of %d spokes in %s",
		r.c.tree.perKs(), r.c.spokes(), r.fig.fluxApply.Round(time.Millisecond))
	for _, spoke := range r.spokes {
		if err := observeSpoke(watchCtx, r.obs, spoke); err != nil {
			return err
		}
	}
	return r.obs.watchEdits(watchCtx)
}

// ksNames are the spokes' Kustomizations, one per hub namespace, each
// named after its namespace (fixture.CreateApp's default).
func (r *fleetRun) ksNames() []string { return r.c.tree.namespaces() }

// startReflux starts the reflux binary, as deployed, and times it until
// every spoke's Kustomization reports NoDrift.
func (r *fleetRun) startReflux(ctx context.Context) error {
	began := time.Now()
	r.reflux = fixture.StartReflux(r.b, r.hub, fixture.Options{AsDeployed: true, StartTimeout: 5 * time.Minute})
	last, err := r.obs.waitAll(ctx, r.ksNames(), cleanAt, scaleReadyTimeout)
	if err != nil {
		return fmt.Errorf("waiting for reflux to report NoDrift: %w", err)
	}
	r.fig.refluxReady = last.Sub(began)
	r.b.Logf("reflux reported NoDrift on all %d spokes %s after it started",
		r.c.spokes(), r.fig.refluxReady.Round(time.Millisecond))
	return nil
}

// idle waits for reflux to go quiet, then reads its memory and the watches
// it holds open in each spoke.
func (r *fleetRun) idle(ctx context.Context) error {
	if _, quiet, err := waitQuiet(ctx, r.reflux.Process, settleTimeout); err != nil {
		return err
	} else if !quiet {
		r.b.Logf("reflux still making requests %s after NoDrift", settleTimeout)
	}
	var err error
	if r.fig.rssIdle, err = r.reflux.RSS(); err != nil {
		return err
	}
	for k := range r.spokes {
		w, err := r.openWatches(k)
		if err != nil {
			return err
		}
		r.b.Logf("%s before the edits: reflux's watches open %s", r.fig.spokes[k].name, w)
	}
	return nil
}

// edit makes the live edits, spoke after spoke, as a user of each spoke
// allowed to edit ConfigMaps only: BenchmarkScale's edits, spread over
// each spoke's file.
func (r *fleetRun) edit(ctx context.Context) error {
	var err error
	if r.fig.requestsBefore, err = requests(ctx, r.reflux.Process); err != nil {
		return err
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	targets := spreadTargets(r.c.tree, r.c.spokes()*r.c.edits)
	for k, spoke := range r.spokes {
		editor, err := spokeEditor(ctx, spoke)
		if err != nil {
			return err
		}
		var mine []target
		for _, t := range targets {
			if t.Namespace == r.c.tree.namespace(k) {
				mine = append(mine, t)
			}
		}
		if r.fig.spokes[k].edits, err = makeEdits(ctx, editor, r.obs, mine, fmt.Sprintf("%s-%d", run, k)); err != nil {
			return err
		}
	}
	return nil
}

// settle waits for reflux to go quiet after the edits, then reads its
// requests, its memory and the watches it holds open in each spoke.
func (r *fleetRun) settle(ctx context.Context) error {
	after, quiet, err := waitQuiet(ctx, r.reflux.Process, settleTimeout)
	if err != nil {
		return err
	}
	if !quiet {
		r.b.Logf("reflux still making requests %s after the edits; requests/change includes them", settleTimeout)
	}
	r.fig.requests = after - r.fig.requestsBefore
	if r.fig.rss, err = r.reflux.RSS(); err != nil {
		return err
	}
	if r.fig.peak, err = r.reflux.PeakRSS(); err != nil {
		return err
	}
	for k := range r.spokes {
		if r.fig.spokes[k].watches, err = r.openWatches(k); err != nil {
			return err
		}
	}
	r.fig.loadEnd = loadOrNaN()
	return nil
}

// spokeEditor is a client of the spoke as editorName, whose group may
// edit ConfigMaps there and nothing else.
func spokeEditor(ctx context.Context, spoke *testenv.Env) (client.Client, error) {
	role, binding := editorRBAC()
	for _, obj := range []client.Object{role, binding} {
		if err := spoke.Client.Create(ctx, obj); err != nil {
			return nil, err
		}
	}
	user, err := spoke.AddUser(editorName, editorGroup)
	if err != nil {
		return nil, err
	}
	return client.New(user.Config, client.Options{Scheme: spoke.Scheme})
}
