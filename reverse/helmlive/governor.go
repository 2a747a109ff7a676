package helmlive

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/observe"
	"github.com/reflux-dev/reflux/reverse/release"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

// The labels helm-controller's post-renderer puts on every object it
// renders, naming the HelmRelease (not the Helm release, whose name
// spec.releaseName may change): what the live watches select on.
var (
	NameLabel      = helmv2.GroupVersion.Group + "/name"
	NamespaceLabel = helmv2.GroupVersion.Group + "/namespace"
)

// DefaultWorkers is how many changes are walked at once when
// Options.Workers is not set.
const DefaultWorkers = 4

// Live is the live watches' cache of the releases' objects.
type Live interface {
	Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool)
}

// Governance says what governs a Kustomization (the intake's registry).
type Governance interface {
	Snapshot(id types.NamespacedName) (reverse.Snapshot, bool)
}

// Executor writes records and holds: the engine's one executor, so that a
// record is written by one hand whichever path decided it.
type Executor interface {
	WithRecord(ctx context.Context, p *execute.Plan, fn func(rec *refluxv1.Drift) (decide.Decision, error)) error
	// Prehold holds p's object ahead of its evaluation, unless a record
	// is about it or being decided (execute.Executor.Prehold), and returns
	// it as the hold left it; nil when it held nothing.
	Prehold(ctx context.Context, p *execute.Plan, at time.Time) (*unstructured.Unstructured, error)
}

// Attributor names the user behind a write to a live object, and who
// deleted one, from the audit log (the engine's attribution.Audit).
type Attributor interface {
	User(obj *unstructured.Unstructured, manager string, at time.Time) observe.Who
	Deleter(obj *unstructured.Unstructured, at time.Time) (reverse.Deleter, bool)
}

// Options are what a Governor needs.
type Options struct {
	Live Live
	// HelmReleases reads HelmReleases, from the manager's cache.
	HelmReleases client.Reader
	// Storage reads Helm's release Secrets one at a time, uncached: a
	// cache would hold every Secret of the cluster.
	Storage release.SecretGetter
	// Scoper tells namespaced kinds from cluster-scoped ones.
	Scoper release.Scoper
	// Detector makes helm-controller's dry run as reflux itself.
	Detector *release.Detector
	// DetectorFor returns a Detector whose dry runs impersonate user, a
	// HelmRelease's ServiceAccount (tenancy.HelmIdentity), as
	// helm-controller's drift detection does; nil leaves every dry run to
	// Detector.
	DetectorFor func(user string) (*release.Detector, error)
	// Owners reads managedFields with helm-controller as Flux's field
	// owner (drift.WithFieldOwner(release.FieldOwner)): who put the
	// chart's values back, helm-controller or a person.
	Owners     *drift.Detector
	Governance Governance
	Executor   Executor
	// Attributor names the person behind a write from the audit log; nil
	// names none.
	Attributor Attributor
	// ClusterScoped tells cluster-scoped kinds, so a chart's objects are
	// keyed as the cluster holds them; nil knows Kubernetes' own kinds.
	ClusterScoped func(schema.GroupKind) bool
	// DefaultServiceAccount is the ServiceAccount, in a HelmRelease's
	// namespace, its objects are held and released as when it names none
	// (tenancy.HelmIdentity, helm-controller's --default-service-account);
	// empty holds as reflux itself.
	DefaultServiceAccount string
	// Cluster says whether hr's release is installed in the cluster this
	// Governor watches, and names that cluster as records do
	// (refluxv1.HelmReleaseRef.Cluster). Nil is the hub's: the releases
	// of HelmReleases with no spec.kubeConfig, named "". The objects of
	// another cluster's release are left to its own Governor: the labels
	// the watches select on name only the HelmRelease, and one in the hub
	// and one in a spoke may carry the same.
	Cluster func(hr *helmv2.HelmRelease) (string, bool)
	// Workers is how many changes are walked at once; DefaultWorkers
	// when zero.
	Workers int
	Log     logr.Logger
	Now     func() time.Time
}

// Governor is the live path of governed HelmReleases' objects.
type Governor struct {
	opts  Options
	queue workqueue.TypedRateLimitingInterface[intake.Key]
	// denyWait spaces the looks again at an object its HelmRelease's
	// ServiceAccount may not dry-run or hold.
	denyWait workqueue.TypedRateLimiter[intake.Key]
	releases *releases
	mapper   *mapper

	mu sync.Mutex
	// seen is when the earliest change of each queued object reached the
	// watch, for the detection latency.
	seen map[intake.Key]time.Time
	// owner is the HelmRelease of each object seen live or recorded: once
	// the object is gone, only this names its record.
	owner map[intake.Key]types.NamespacedName
	// release is the latest release of each HelmRelease seen, as
	// release.Ref's String.
	release map[types.NamespacedName]string
	// attribution counts the looks at an object whose writer, or
	// deleter, the audit log has not named yet (intake.RetryAttribution's
	// bound).
	attribution map[intake.Key]int
	// deleted are the objects seen deleted and not seen live since, with
	// what they last were and when: a deletion is decided from these
	// until it proves Helm's own, or the object comes back, so that the
	// looks the mapper and the record's changes bring still see it.
	deleted map[intake.Key]deletion
	// health is what keeps each HelmRelease's objects from being
	// evaluated or traced, for its ReverseDrifted condition; onHealth
	// hears of each change of it.
	health   map[types.NamespacedName]Health
	onHealth func(types.NamespacedName)
}

// Health is what keeps a HelmRelease's objects from being evaluated or
// traced, besides their records: its ReverseDrifted condition's inputs
// (report.HelmDrifted).
type Health struct {
	// Release is the latest release helm-controller made, as
	// release.Ref's String.
	Release string
	// ReleaseErr is why Release cannot be read from Helm's storage.
	ReleaseErr error
	// ChartErr is why Release's chart does not render here.
	ChartErr error
	// Denied are the release's objects, as Kind/namespace/name, that the
	// HelmRelease's ServiceAccount may not dry-run or hold, and the
	// permission it lacks: their changes are kept, unevaluated and not
	// held, until it is granted. Never changed in place (setHealth).
	Denied map[string]*tenancy.ForbiddenError
	// Stopped is why helm-controller upgrades nothing, from the
	// HelmRelease last read (Released): a chart artifact or values it
	// cannot use. Changes are still compared with Release and held.
	Stopped Stopped
}

func (h Health) same(o Health) bool {
	msg := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	if len(h.Denied) != len(o.Denied) {
		return false
	}
	for obj, f := range h.Denied {
		if g, ok := o.Denied[obj]; !ok || g.Error() != f.Error() {
			return false
		}
	}
	return h.Release == o.Release && msg(h.ReleaseErr) == msg(o.ReleaseErr) && msg(h.ChartErr) == msg(o.ChartErr) &&
		msg(h.Stopped.Artifact) == msg(o.Stopped.Artifact) && msg(h.Stopped.Values) == msg(o.Stopped.Values)
}

// detector returns the Detector whose dry runs go out as user; "" is
// reflux's own identity.
func (g *Governor) detector(user string) (*release.Detector, error) {
	if user == "" || g.opts.DetectorFor == nil {
		return g.opts.Detector, nil
	}
	d, err := g.opts.DetectorFor(user)
	if err != nil {
		return nil, fmt.Errorf("impersonating %s: %w", user, err)
	}
	return d, nil
}

// deny notes that the HelmRelease id's ServiceAccount may not dry-run or
// hold obj, and allow (f nil) that it may again.
func (g *Governor) deny(id types.NamespacedName, obj string, f *tenancy.ForbiddenError) {
	g.mu.Lock()
	_, was := g.health[id].Denied[obj]
	g.mu.Unlock()
	if f == nil && !was {
		return // the common case: nothing to forget, and no entry to make
	}
	// One object's walks never run at once (the queue), so was holds.
	g.setHealth(id, func(h *Health) {
		denied := maps.Clone(h.Denied)
		if f == nil {
			delete(denied, obj)
		} else {
			if denied == nil {
				denied = map[string]*tenancy.ForbiddenError{}
			}
			denied[obj] = f
		}
		h.Denied = denied
	})
}

// New returns a Governor; Start runs its workers.
func New(opts Options) (*Governor, error) {
	switch {
	case opts.Live == nil, opts.HelmReleases == nil, opts.Storage == nil, opts.Scoper == nil, opts.Detector == nil,
		opts.Owners == nil, opts.Governance == nil, opts.Executor == nil:
		return nil, errors.New("helmlive: every option but Workers, Log and Now is required")
	}
	if opts.Workers < 1 {
		opts.Workers = DefaultWorkers
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	g := &Governor{
		opts: opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[intake.Key](),
			workqueue.TypedRateLimitingQueueConfig[intake.Key]{Name: "reflux-helm"}),
		denyWait: intake.NewDenyWait(),
		releases: newReleases(opts.Storage, opts.Scoper),
		seen:     map[intake.Key]time.Time{},
		owner:    map[intake.Key]types.NamespacedName{},
		release:  map[types.NamespacedName]string{},

		attribution: map[intake.Key]int{},
		deleted:     map[intake.Key]deletion{},
		health:      map[types.NamespacedName]Health{},
	}
	// A found key brings its object back untimed: the change it belongs
	// to was recorded, and timed, when it came.
	charts, err := chart.NewCache(chartCacheSize)
	if err != nil {
		return nil, fmt.Errorf("helmlive: %w", err)
	}
	g.mapper = newMapper(charts, opts.ClusterScoped, func(k intake.Key) { g.queue.Add(k) }, g.chartRendered, opts.Log.WithName("values"))
	return g, nil
}

// Start runs the workers until ctx ends.
func (g *Governor) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { g.mapper.run(ctx) })
	for range g.opts.Workers {
		wg.Go(func() {
			for g.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	g.queue.ShutDown()
	wg.Wait()
	return nil
}

// OnLiveAdd takes an object a watch listed or saw created: it is compared
// with its release like any change, but not timed as one.
func (g *Governor) OnLiveAdd(gvk schema.GroupVersionKind, cur *unstructured.Unstructured, _ time.Time) {
	g.enqueue(intake.KeyOf(gvk, cur), cur, time.Time{}, nil)
}

// OnLiveUpdate takes a change of a release's object.
func (g *Governor) OnLiveUpdate(gvk schema.GroupVersionKind, _, cur *unstructured.Unstructured, seen time.Time) {
	g.enqueue(intake.KeyOf(gvk, cur), cur, seen, nil)
}

// OnLiveDelete takes a deleted object: drift when someone but Helm
// deleted what the release renders (walk.deletion), and otherwise the end
// of its record.
func (g *Governor) OnLiveDelete(gvk schema.GroupVersionKind, last *unstructured.Unstructured) {
	now := g.opts.Now()
	g.enqueue(intake.KeyOf(gvk, last), last, now, &deletion{last: last, seen: now})
}

// deletion is an object seen deleted: what it last was, and when.
type deletion struct {
	last *unstructured.Unstructured
	seen time.Time
}

// forgetDeletion ends what is known of k's deletion: the object is back,
// or its deletion is decided as none of a person's.
func (g *Governor) forgetDeletion(k intake.Key) {
	g.mu.Lock()
	delete(g.deleted, k)
	g.mu.Unlock()
}

// OnRecord takes a change of a record of a release's object: a user may
// have dismissed it.
func (g *Governor) OnRecord(d *refluxv1.Drift) {
	if d.Spec.HelmRelease == nil {
		return
	}
	o := d.Spec.Object
	k := intake.Key{GVK: schema.FromAPIVersionAndKind(o.APIVersion, o.Kind), Namespace: o.Namespace, Name: o.Name}
	g.mu.Lock()
	g.owner[k] = types.NamespacedName{Namespace: d.Spec.HelmRelease.Namespace, Name: d.Spec.HelmRelease.Name}
	g.mu.Unlock()
	g.queue.Add(k)
}

// Released takes a HelmRelease the reconciler read, nil once it is gone.
// When helm-controller has made a new release of it, every object of it
// seen is compared again: an upgrade that leaves an object as it was
// sends no watch event, and a merged values change is exactly that, for
// the live edit already had the value; its record would wait for an
// unrelated change to be resolved.
//
// It also keeps what stops helm-controller upgrading hr (StoppedBy) in
// hr's Health, for its ReverseDrifted condition.
func (g *Governor) Released(id types.NamespacedName, hr *helmv2.HelmRelease) {
	if hr == nil {
		g.mu.Lock()
		delete(g.release, id)
		delete(g.health, id)
		for k := range g.deleted {
			if g.owner[k] == id {
				delete(g.deleted, k) // uninstalled with it: Helm's deletions
			}
		}
		g.mu.Unlock()
		return
	}
	stopped := StoppedBy(hr)
	g.setHealth(id, func(h *Health) { h.Stopped = stopped })
	ref, err := release.Latest(hr)
	if err != nil {
		return // none yet: the status write that names one brings it back
	}
	var keys []intake.Key
	g.mu.Lock()
	if g.release[id] != ref.String() {
		g.release[id] = ref.String()
		for k, owner := range g.owner {
			if owner == id {
				keys = append(keys, k)
			}
		}
	}
	g.mu.Unlock()
	for _, k := range keys {
		g.queue.Add(k)
	}
}

// retryAttribution looks at k again shortly while a field's user is not
// known: the record is written at once, and the apiserver's audit batch
// often names the user a moment later (intake's RetryAttribution, whose
// waits and bound it shares).
//
// Given up on, an object stays so until a look names every user: its
// later changes' users wait for the audit log's next look at it. It
// reports whether k is looked at again.
func (g *Governor) retryAttribution(k intake.Key, missing bool) bool {
	g.mu.Lock()
	switch {
	case !missing:
		delete(g.attribution, k)
		fallthrough
	case g.attribution[k] >= intake.AttributionRetries:
		g.mu.Unlock()
		return false
	}
	g.attribution[k]++
	wait := intake.AttributionWait(g.attribution[k])
	g.mu.Unlock()
	g.queue.AddAfter(k, wait)
	return true
}

// ReleaseOf returns the HelmRelease whose release rendered obj, from the
// labels helm-controller put on it.
func ReleaseOf(obj client.Object) (types.NamespacedName, bool) {
	l := obj.GetLabels()
	id := types.NamespacedName{Namespace: l[NamespaceLabel], Name: l[NameLabel]}
	return id, id.Name != "" && id.Namespace != ""
}

// enqueue queues a change of obj, which gone says was deleted; any other
// change says it is live (again, once helm-controller puts it back).
func (g *Governor) enqueue(k intake.Key, obj *unstructured.Unstructured, seen time.Time, gone *deletion) {
	hr, ok := ReleaseOf(obj)
	if !ok {
		return
	}
	g.mu.Lock()
	g.owner[k] = hr
	if gone != nil {
		g.deleted[k] = *gone
	} else {
		delete(g.deleted, k)
	}
	if at, queued := g.seen[k]; !seen.IsZero() && (!queued || at.IsZero() || seen.Before(at)) {
		g.seen[k] = seen
	} else if !queued {
		g.seen[k] = time.Time{}
	}
	g.mu.Unlock()
	g.queue.Add(k)
}

// keepSeen keeps seen as the time of k's change for its next look, unless
// an earlier one is kept.
func (g *Governor) keepSeen(k intake.Key, seen time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if at, ok := g.seen[k]; !ok || at.IsZero() || seen.Before(at) {
		g.seen[k] = seen
	}
}

// next walks one queued change; false once the queue shuts down.
func (g *Governor) next(ctx context.Context) bool {
	k, shutdown := g.queue.Get()
	if shutdown {
		return false
	}
	defer g.queue.Done(k)
	g.mu.Lock()
	seen := g.seen[k]
	delete(g.seen, k)
	g.mu.Unlock()
	err := g.handle(ctx, k, seen)
	var denied *tenancy.ForbiddenError
	switch {
	case err == nil:
		g.queue.Forget(k)
		g.denyWait.Forget(k)
		return true
	case errors.Is(err, errNotYet), errors.Is(err, release.ErrBusy), errors.Is(err, drift.ErrStale):
		g.opts.Log.V(1).Info("looked at again shortly", "object", k.String(), "why", err.Error())
	case errors.As(err, &denied):
		if g.denyWait.NumRequeues(k) == 0 {
			g.opts.Log.Error(err, "cannot act as the HelmRelease's ServiceAccount: change kept, not held", "object", k.String())
		}
	default:
		g.opts.Log.Error(err, "evaluating a live change of a Helm release's object; retrying", "object", k.String())
	}
	// Never dropped: the change comes back with its time.
	if !seen.IsZero() {
		g.keepSeen(k, seen)
	}
	if denied != nil {
		// A permission comes back with no event on the object: looked at
		// again slowly, as the Kustomize live path does (intake.NewDenyWait).
		g.queue.AddAfter(k, g.denyWait.When(k))
		return true
	}
	g.queue.AddRateLimited(k)
	return true
}

// errNotYet is a change that cannot be evaluated until helm-controller
// has written the release's status: retried with backoff, not logged as a
// failure.
var errNotYet = errors.New("the HelmRelease names no release yet")

// handle brings one object's record and hold up to date.
func (g *Governor) handle(ctx context.Context, k intake.Key, seen time.Time) error {
	live, exists := g.opts.Live.Get(k.GVK, k.Namespace, k.Name)
	g.mu.Lock()
	id, known := g.owner[k]
	del, deleted := g.deleted[k]
	g.mu.Unlock()
	if exists {
		id, known = ReleaseOf(live)
	}
	if !known {
		return nil // never one of a release's
	}
	w := walk{g: g, k: k, live: live, seen: seen}
	if !exists && deleted {
		w.deleted = &del
	}
	err := g.walk(ctx, id, w)
	if err == nil && !exists {
		// Done with a gone object, unless its deletion is still being
		// decided: its next look (a record's change, the mapper) finds its
		// HelmRelease here.
		g.mu.Lock()
		if _, deciding := g.deleted[k]; !deciding {
			delete(g.owner, k)
		}
		g.mu.Unlock()
	}
	return err
}

// walk runs w for an object of the HelmRelease id.
func (g *Governor) walk(ctx context.Context, id types.NamespacedName, w walk) error {
	hr := &helmv2.HelmRelease{}
	if err := g.opts.HelmReleases.Get(ctx, id, hr); err != nil {
		if apierrors.IsNotFound(err) {
			// A HelmRelease gone takes its records' holds with the
			// Kustomization's governance (intake.Forget), and its objects
			// with it.
			g.forgetDeletion(w.k)
			return nil
		}
		return err
	}
	cluster, ok := g.cluster(hr)
	if !ok {
		// Another cluster's Governor has it; what this one knew of the
		// object (a deletion seen, say) is not its to decide.
		g.forgetDeletion(w.k)
		return nil
	}
	w.hr, w.cluster = hr, cluster
	return w.run(ctx)
}

// cluster is Options.Cluster, or the hub's when it is nil.
func (g *Governor) cluster(hr *helmv2.HelmRelease) (string, bool) {
	if g.opts.Cluster == nil {
		return "", hr.Spec.KubeConfig == nil
	}
	return g.opts.Cluster(hr)
}

// Governs reports whether reflux governs hr's objects, given that a
// governed Kustomization applies it: only when it is not opted out.
func Governs(hr *helmv2.HelmRelease) bool {
	return hr.GetAnnotations()[refluxv1.ReverseSyncAnnotation] != refluxv1.ReverseSyncDisabled
}

// Kinds returns the kinds of the objects of hr's latest release: what
// the live watches must cover.
func (g *Governor) Kinds(ctx context.Context, hr *helmv2.HelmRelease) ([]schema.GroupVersionKind, error) {
	rel, err := g.latest(ctx, hr)
	if err != nil {
		return nil, err
	}
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, o := range rel.objects {
		if gvk := o.GroupVersionKind(); !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	return out, nil
}

// latest is releases.latest, keeping hr's Health: a release that cannot
// be read says so on the HelmRelease until it can.
func (g *Governor) latest(ctx context.Context, hr *helmv2.HelmRelease) (*made, error) {
	id := types.NamespacedName{Namespace: hr.Namespace, Name: hr.Name}
	rel, err := g.releases.latest(ctx, hr)
	switch {
	case errors.Is(err, errNotYet):
	case err != nil:
		ref, _ := release.Latest(hr) // known: only its storage failed
		g.setHealth(id, func(h *Health) {
			h.Release, h.ReleaseErr, h.ChartErr = ref.String(), err, nil
		})
	default:
		g.setHealth(id, func(h *Health) {
			if h.Release != rel.ref.String() {
				h.ChartErr = nil // the new release's chart is yet to be rendered
			}
			h.Release, h.ReleaseErr = rel.ref.String(), nil
		})
	}
	return rel, err
}

// chartRendered is the mapper's word on rel's chart: err when it does not
// render here.
func (g *Governor) chartRendered(rel *made, err error) {
	g.setHealth(rel.owner, func(h *Health) {
		if h.Release == rel.ref.String() || h.Release == "" {
			h.Release, h.ChartErr = rel.ref.String(), err
		}
	})
}

// Health returns what keeps the objects of the HelmRelease id from
// being evaluated or traced.
func (g *Governor) Health(id types.NamespacedName) Health {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.health[id]
}

// OnHealth has fn hear of every change of a HelmRelease's Health, for its
// condition; set it before Start.
func (g *Governor) OnHealth(fn func(types.NamespacedName)) {
	g.mu.Lock()
	g.onHealth = fn
	g.mu.Unlock()
}

func (g *Governor) setHealth(id types.NamespacedName, change func(*Health)) {
	g.mu.Lock()
	was := g.health[id]
	now := was
	change(&now)
	g.health[id] = now
	notify := g.onHealth
	g.mu.Unlock()
	if notify != nil && !now.same(was) {
		notify(id)
	}
}
