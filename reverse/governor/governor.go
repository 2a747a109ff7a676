package governor

import (
	"context"
	"fmt"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/evaluate"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/expiry"
	"github.com/reflux-dev/reflux/reverse/helmlive"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/metrics"
	"github.com/reflux-dev/reflux/reverse/owed"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/release"
	"github.com/reflux-dev/reflux/reverse/writeback/scheduler"
)

// Options wire a Governor. Client, APIReader, Detector, Holder, Live and
// Sealer are required.
type Options struct {
	// Client reads Drift records from the cache and writes them.
	Client client.Client
	// APIReader reads records straight from the apiserver, where a cached
	// read could be behind a write the engine just made.
	APIReader client.Reader
	// Objects reads a governed object straight from the apiserver of the
	// cluster it is in, before any watch of its kind runs (writeDown);
	// nil reads through APIReader, the hub's.
	Objects  client.Reader
	Detector Detector
	Holder   Holder
	Live     LiveStore
	// Sealer seals every record the engine writes, and the engine acts
	// only on records whose seal verifies (see reverse/record).
	Sealer *record.Sealer
	// Renders, when set, forgets a Kustomization's renders with it.
	Renders Renders
	// Writer writes drift to Git; nil reports without writing.
	Writer Writer
	// Targets resolves what Writer needs from the cluster.
	Targets Targets
	// Attributor names users from the audit log; nil skips attribution.
	Attributor Attributor
	// Marker annotates audit-derived manual hotfixes; nil leaves them
	// unannotated.
	Marker Marker
	// Events records events on Kustomizations; nil records none.
	Events EventRecorder
	// Metrics takes the engine's measurements; nil takes none.
	Metrics *metrics.Metrics
	// Impersonation acts as a Kustomization's Identity; nil acts as
	// reflux itself for every Kustomization.
	Impersonation Impersonation
	// InShard reports whether this reflux may act on records of a
	// Kustomization it does not govern: one its --watch-label-selector
	// selects, or one that is gone. Shards then never both act on one
	// record. Nil allows every Kustomization.
	InShard func(ctx context.Context, ks types.NamespacedName) (bool, error)
	// Notify tells the Kustomization reconciler that something it reports
	// changed: a write-back finished, a resync completed.
	Notify func(types.NamespacedName)
	Log    logr.Logger

	// LiveWorkers evaluate live changes; default 4.
	LiveWorkers int
	// ResyncWorkers evaluate resyncs, apart from live changes so that a
	// resync never delays one; default 1.
	ResyncWorkers int
	// ResyncQPS bounds the dry runs a resync makes per second; default 10.
	ResyncQPS float64
	// WriteBackTimeout bounds one write-back run; default 2m.
	WriteBackTimeout time.Duration
	// Helm, when set, governs the objects helm-controller renders for the
	// HelmReleases governed Kustomizations apply (reverse/helmlive).
	Helm *HelmOptions
	// Deletions, when set, names the deletions the audit log saw, which
	// the engine replays when it takes over a Kustomization (replay.go);
	// nil replays only the deletions its records say were written down.
	Deletions Deletions
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (o *Options) validate() error {
	var missing []string
	for name, set := range map[string]bool{"Client": o.Client != nil, "APIReader": o.APIReader != nil,
		"Detector": o.Detector != nil, "Holder": o.Holder != nil, "Live": o.Live != nil, "Sealer": o.Sealer != nil,
		"Targets (with Writer)": o.Writer == nil || o.Targets != nil} {
		if !set {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("governor: missing %v", missing)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Notify == nil {
		o.Notify = func(types.NamespacedName) {}
	}
	return nil
}

// Governor is the drift engine: its stages, wired in the order a live
// change goes through them. Create it with New and run it with Start.
type Governor struct {
	opts   Options
	intake *intake.Intake
	eval   *evaluate.Evaluator
	exec   *execute.Executor
	timers *expiry.Timers
	owed   *owed.Releases
	// sched is nil when nothing is written to Git.
	sched *scheduler.Scheduler
	// helm is nil unless Options.Helm is set.
	helm *helmlive.Governor
	// replays are the Kustomizations whose deletions are to be replayed
	// from the audit log, once each (replay.go).
	replays  workqueue.TypedRateLimitingInterface[types.NamespacedName]
	replayMu sync.Mutex
	replayed map[types.NamespacedName]bool
	// writeDowns are the Kustomizations whose audited deletions are to be
	// written down before any render, once each (replay.go, writeDown).
	writeDowns workqueue.TypedRateLimitingInterface[types.NamespacedName]
	wroteDown  map[types.NamespacedName]bool
}

// HelmOptions are what the live path of HelmReleases' objects reads
// (helmlive.Options); the engine gives it its registry and executor.
type HelmOptions struct {
	Live         helmlive.Live
	HelmReleases client.Reader
	Storage      release.SecretGetter
	Scoper       release.Scoper
	Detector     *release.Detector
	// DetectorFor is helmlive.Options'.
	DetectorFor func(user string) (*release.Detector, error)
	Owners      *drift.Detector
	// ClusterScoped tells cluster-scoped kinds (helmlive.Options).
	ClusterScoped func(schema.GroupKind) bool
	// DefaultServiceAccount is helmlive.Options'.
	DefaultServiceAccount string
	Workers               int
	// Cluster is helmlive.Options': which HelmReleases' releases are
	// installed in this engine's cluster, and its name in their records.
	Cluster func(hr *helmv2.HelmRelease) (string, bool)
	// Governance, when set, makes this the engine of a remote cluster
	// that helm-controller installs HelmReleases in, for Kustomizations
	// another engine governs (the hub's): their state is read from it,
	// for the Helm path and the expiry of its records' holds. Nil is
	// this engine's own registry.
	Governance helmlive.Governance
}

// New returns a Governor; call Start to run its workers.
func New(opts Options) (*Governor, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	gv := &Governor{opts: opts, replays: newReplays("reflux-replay"), replayed: map[types.NamespacedName]bool{},
		writeDowns: newReplays("reflux-write-down"), wroteDown: map[types.NamespacedName]bool{}}
	var err error
	eopts := evaluate.Options{Detector: opts.Detector, Attributor: opts.Attributor, Live: opts.Live, Metrics: opts.Metrics,
		ResyncQPS: opts.ResyncQPS, Now: opts.Now}
	if opts.Impersonation != nil {
		eopts.Impersonation = detectors{opts.Impersonation}
	}
	if gv.eval, err = evaluate.New(eopts); err != nil {
		return nil, err
	}
	xopts := execute.Options{Client: opts.Client, APIReader: opts.APIReader, Holder: opts.Holder, Sealer: opts.Sealer,
		Marker: opts.Marker, Events: opts.Events, Metrics: opts.Metrics, Closer: gv.eval.Closer, Log: opts.Log, Now: opts.Now}
	if opts.Impersonation != nil {
		xopts.Impersonation = opts.Impersonation
	}
	if gv.exec, err = execute.New(xopts); err != nil {
		return nil, err
	}
	if gv.intake, err = intake.New(intake.Options{Writers: opts.Detector, Live: opts.Live, Handler: gv, Metrics: opts.Metrics,
		Notify: opts.Notify, Log: opts.Log, Now: opts.Now, LiveWorkers: opts.LiveWorkers, ResyncWorkers: opts.ResyncWorkers,
		Preholder: gv}); err != nil {
		return nil, err
	}
	var live expiry.LiveStore = opts.Live
	if opts.Helm != nil {
		live = eitherLive{opts.Live, opts.Helm.Live}
	}
	var registry helmlive.Governance = gv.intake
	if opts.Helm != nil && opts.Helm.Governance != nil {
		registry = opts.Helm.Governance
	}
	if gv.timers, err = expiry.New(expiry.Options{Client: opts.Client, Registry: registry, Records: gv.exec, Live: live,
		Log: opts.Log, Now: opts.Now}); err != nil {
		return nil, err
	}
	if gv.owed, err = owed.New(owed.Options{Records: opts.APIReader, Holders: gv.exec, Log: opts.Log}); err != nil {
		return nil, err
	}
	if h := opts.Helm; h != nil {
		if gv.helm, err = helmlive.New(helmlive.Options{Live: h.Live, HelmReleases: h.HelmReleases, Storage: h.Storage,
			Scoper: h.Scoper, Detector: h.Detector, DetectorFor: h.DetectorFor, Owners: h.Owners, Governance: registry, Executor: gv.exec, Attributor: opts.Attributor,
			ClusterScoped: h.ClusterScoped, DefaultServiceAccount: h.DefaultServiceAccount, Workers: h.Workers, Cluster: h.Cluster,
			Log: opts.Log.WithName("helm"), Now: opts.Now}); err != nil {
			return nil, err
		}
	}
	if opts.Writer != nil {
		gv.sched, err = scheduler.New(scheduler.Options{Writer: opts.Writer, Targets: opts.Targets, APIReader: opts.APIReader,
			Engine: engineView{gv.intake}, Records: gv.exec, Live: opts.Live, Sealer: opts.Sealer, ClosedBy: gv.eval.ClosedBy,
			Events: opts.Events, Metrics: opts.Metrics, Notify: opts.Notify, Log: opts.Log, Now: opts.Now,
			Timeout: opts.WriteBackTimeout})
	}
	return gv, err
}

// Start runs every stage's workers until ctx ends. It implements
// manager.Runnable, so the engine runs under the manager's leader
// election.
func (gv *Governor) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	run := func(start func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start(ctx)
		}()
	}
	if gv.sched != nil {
		run(gv.sched.Start)
	}
	run(gv.intake.Start)
	run(func(ctx context.Context) { gv.runReplays(ctx, gv.replays, gv.replay) })
	run(func(ctx context.Context) { gv.runReplays(ctx, gv.writeDowns, gv.writeDown) })
	run(gv.timers.Start)
	run(gv.owed.Start)
	if gv.helm != nil {
		run(func(ctx context.Context) { _ = gv.helm.Start(ctx) })
	}
	wg.Wait()
	return nil
}

func (gv *Governor) now() time.Time { return gv.opts.Now() }

// Helm is the live path of HelmReleases' objects: the handler of their
// watches. Nil unless Options.Helm was set.
func (gv *Governor) Helm() *helmlive.Governor { return gv.helm }

// IsSealed reports whether reflux wrote d: its seal verifies.
func (gv *Governor) IsSealed(d *refluxv1.Drift) bool {
	return gv.opts.Sealer.Verify(d) == nil
}

// Sealed returns the records whose seal verifies: the only ones the
// engine acts on or reports. The others are dealt with when the engine
// looks at them (the executor deletes them).
func (gv *Governor) Sealed(all []refluxv1.Drift) []refluxv1.Drift {
	out := make([]refluxv1.Drift, 0, len(all))
	for i := range all {
		if gv.opts.Sealer.Verify(&all[i]) == nil {
			out = append(out, all[i])
		}
	}
	return out
}

// eitherLive finds an object in either live store: a Kustomization's, or
// a Helm release's (the two watches select on different labels).
type eitherLive [2]expiry.LiveStore

func (e eitherLive) Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool) {
	for _, s := range e {
		if u, ok := s.Get(gvk, namespace, name); ok {
			return u, true
		}
	}
	return nil, false
}

// engineView is the scheduler's view of the intake.
type engineView struct{ *intake.Intake }

func (v engineView) AwaitingAttribution(id types.NamespacedName, obj refluxv1.ObjectRef) bool {
	return v.Intake.AwaitingAttribution(id, keyOfRef(obj))
}
