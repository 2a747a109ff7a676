package helmlive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/evaluate"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/observe"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/release"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

// walk is one change of one object of hr's release.
type walk struct {
	g  *Governor
	hr *helmv2.HelmRelease
	// cluster names the cluster hr's release is installed in, as its
	// records do: "" for the hub.
	cluster string
	k       intake.Key
	live    *unstructured.Unstructured // nil when the object is gone
	seen    time.Time
	// deleted is the object's deletion, when it is gone and was seen
	// deleted; nil otherwise.
	deleted *deletion
}

// ref names hr, its release, and the cluster it is installed in, for
// its objects' records.
func (w walk) ref(release string) *refluxv1.HelmReleaseRef {
	return &refluxv1.HelmReleaseRef{Namespace: w.hr.Namespace, Name: w.hr.Name, Release: release, Cluster: w.cluster}
}

func (w walk) run(ctx context.Context) error {
	owner := intake.OwnerOf(w.hr)
	if owner.Name == "" {
		return nil // no Flux Kustomization applied the HelmRelease
	}
	ks := refluxv1.KustomizationRef{Namespace: owner.Namespace, Name: owner.Name}
	obj := refluxv1.ObjectRef{APIVersion: w.k.GVK.GroupVersion().String(), Kind: w.k.GVK.Kind, Namespace: w.k.Namespace, Name: w.k.Name}
	if w.live != nil {
		obj = intake.ObjectRef(w.k.GVK, w.live)
	}
	ref := w.ref("")
	p := execute.Plan{Name: record.Name(ks, obj), Namespace: ks.Namespace, Object: obj, HelmRelease: ref, Seen: w.seen}
	snap, governed := w.g.opts.Governance.Snapshot(owner)
	id := types.NamespacedName{Namespace: w.hr.Namespace, Name: w.hr.Name}
	if w.deleted != nil && governed && Governs(w.hr) && w.hr.DeletionTimestamp.IsZero() {
		return w.deletion(ctx, snap, &p)
	}
	if w.live == nil || !governed || !Governs(w.hr) {
		// Nor is a deletion decided: helm-controller uninstalls a
		// HelmRelease being deleted, and nothing else is reflux's.
		w.g.forgetDeletion(w.k)
		// Gone, or not governed: only what a user asked of a record is
		// done, a dismissal and letting a record go. Nothing is asked of
		// the ServiceAccount any more, so no refusal of it stands.
		w.g.deny(id, objectName(obj), nil)
		return w.g.opts.Executor.WithRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
			return decide.Decide(decide.Input{Name: p.Name, Record: rec, Live: w.liveState(), Now: w.g.opts.Now()}), nil
		})
	}
	p.Kustomization = snap.Gov.Kustomization
	// The release's objects are helm-controller's writes as the
	// HelmRelease's ServiceAccount, not the Kustomization's: the dry run
	// and the hold go out as it.
	p.As = tenancy.HelmIdentity(w.hr, w.g.opts.DefaultServiceAccount)
	if held := w.prehold(ctx, snap, &p); held != nil {
		w.live = held
	}
	rel, err := w.g.latest(ctx, w.hr)
	if err != nil {
		err = fmt.Errorf("HelmRelease %s/%s: %w", w.hr.Namespace, w.hr.Name, err)
		if errors.Is(err, errNotYet) {
			return err // no release yet: nothing Flux made to compare with or erase
		}
		// The live path never waits on reading the release: the change
		// is written down and held now, and the retry evaluates it.
		return errors.Join(err, w.pending(ctx, snap, &p))
	}
	ref.Release = rel.ref.String()
	want := rel.byKey[desired.KeyOf(w.live)]
	det, err := w.g.detector(p.As)
	if err != nil {
		return err
	}
	err = w.g.opts.Executor.WithRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		return w.decide(ctx, det, snap, rel, want, p.Name, rec)
	})
	f, denied := tenancy.AsForbidden(err, p.As)
	if !denied {
		if err == nil {
			w.g.deny(id, objectName(p.Object), nil)
		}
		return err
	}
	// The HelmRelease's ServiceAccount may not dry-run or hold the
	// object, so neither may reflux: the change stays where it is, on the
	// live object, and the HelmRelease says which permission is missing.
	// The error brings the object back, slowly, until it is granted.
	w.g.deny(id, objectName(p.Object), f)
	return fmt.Errorf("acting on %s as the HelmRelease's ServiceAccount: %w", objectName(p.Object), f)
}

// prehold holds the object of a person's edit before the release is read
// and compared with it, and returns the object as the hold left it; nil
// when it held nothing. Reading Helm's storage and helm-controller's dry
// run put the hold of a chart's Deployment over 100 ms after the edit
// (issue 19 §8); the hold itself is one request. The walk goes on with
// the object the apiserver answered, the hold in its managedFields
// (release.Exclude tells reflux's hold from anyone else's by them): the
// hold's own watch event is no change to look at (decide.Meaningful), and
// the cache may not have it yet. The evaluation keeps the hold for drift
// it holds and releases it otherwise (decide.Decide), as it does the
// intake hold lane's. Only a change seen on the watch is preheld: a
// listed object or a record's change is evaluated first.
func (w walk) prehold(ctx context.Context, snap reverse.Snapshot, p *execute.Plan) *unstructured.Unstructured {
	if w.seen.IsZero() || !snap.Gov.MayHold() || evaluate.HeldAny(w.live) || w.live.GetDeletionTimestamp() != nil {
		return nil
	}
	writer, _, err := evaluate.WrittenBy(w.g.opts.Owners, nil, w.live)
	if err != nil || writer == nil {
		return nil // only helm-controller's, or allowed, writes: nothing to keep
	}
	// The hold names the object's UID, so a recreated object is never
	// held in its place.
	held, err := w.g.opts.Executor.Prehold(ctx, p, w.g.opts.Now())
	if err != nil {
		// The evaluation holds it in its turn, or reports why it may not.
		w.g.opts.Log.V(1).Info("holding ahead of the evaluation failed", "object", w.k.String(), "error", err.Error())
		return nil
	}
	if held != nil {
		// From the watch event to the apiserver's answer: reflux's share
		// of an edit's time to its hold. The edit's own request and the
		// watch's delivery are the rest (issue 19 §8, bench/results.md).
		w.g.opts.Log.V(1).Info("held ahead of the evaluation", "object", w.k.String(), "afterWatch", w.g.opts.Now().Sub(w.seen).String())
	}
	return held
}

// pending writes the change down as a Pending record, held when the
// policy lets reflux hold, while the release it is compared with cannot
// be read: helm-controller's drift correction, or the next upgrade, would
// erase it meanwhile. The walk's retry evaluates it once the release
// reads (decide.Decide fills a Pending record in, or closes it as
// NoDrift and releases it). A change only allowed writers made is none.
func (w walk) pending(ctx context.Context, snap reverse.Snapshot, p *execute.Plan) error {
	var users evaluate.UserNamer
	if w.g.opts.Attributor != nil {
		users = w.g.opts.Attributor
	}
	writer, written, err := evaluate.WrittenBy(w.g.opts.Owners, users, w.live)
	if err != nil {
		return fmt.Errorf("reading the writers of %s/%s: %w", p.Object.Namespace, p.Object.Name, err)
	}
	if writer == nil {
		return nil
	}
	hold := snap.Gov.MayHold() && !evaluate.HeldAny(w.live)
	return w.g.opts.Executor.WithRecord(ctx, p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		return decide.Pending(decide.PendingInput{Name: p.Name, Record: rec, Live: w.liveState(), Kustomization: snap.Gov.Ref(),
			Policy: snap.Gov.Policy.Name, Object: p.Object, Writer: writer, Written: written, Hold: hold, Now: w.g.opts.Now()}), nil
	})
}

// objectName names an object in logs and conditions, Kind/namespace/name.
func objectName(o refluxv1.ObjectRef) string {
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

func (w walk) liveState() decide.Live {
	if w.live == nil {
		return decide.Live{}
	}
	return evaluate.LiveState(w.live)
}

// decide compares the live object with want, the release's object (nil
// when the release has none: a leftover of an older release, or a hook),
// as helm-controller does, and decides under the record's lock.
func (w walk) decide(ctx context.Context, det *release.Detector, snap reverse.Snapshot, rel *made, want *unstructured.Unstructured,
	name string, rec *refluxv1.Drift) (decide.Decision, error) {
	ref := w.ref(rel.ref.String())
	now := w.g.opts.Now()
	// Only an upgrade applies over a hold: helm-controller's drift
	// correction stays off a held object (docs/flux-behaviour.md).
	in := decide.Input{Name: name, Record: rec, Live: w.liveState(), Evaluated: true, Now: now,
		Revision: snap.Gov.Kustomization.Status.LastAppliedRevision, Upgrade: w.hr.Namespace + "/" + w.hr.Name}
	if want == nil {
		// Not in the release helm-controller made: nothing to compare,
		// and a record of it is settled.
		in.Declared = true
		return decide.Decide(in), nil
	}
	dd := w.hr.GetDriftDetection()
	paths, err := release.IgnorePaths(dd.Ignore, want)
	if err != nil {
		return decide.Decision{}, fmt.Errorf("HelmRelease %s/%s ignore rules: %w", w.hr.Namespace, w.hr.Name, err)
	}
	res, err := det.Detect(ctx, release.Input{Desired: want, Live: w.live, IgnorePaths: paths, Mode: dd.GetMode()})
	if errors.Is(err, drift.ErrStale) {
		// A newer version of the object is on its way through the watch,
		// unless it is reflux's own hold, which the watch drops: the
		// object is looked at again shortly either way (Governor.next).
		return decide.Decision{}, err
	}
	if err != nil {
		return decide.Decision{}, fmt.Errorf("comparing with release %s: %w", ref.Release, err)
	}
	if rec == nil && len(res.Fields) > 0 && w.upgrading(res.Fields) {
		// helm-controller applies a release newer than the one its status
		// names yet: an upgrade in flight, not drift. Its status write
		// brings every object of the release back (Released), to be
		// compared with that release.
		return decide.Decision{Why: "helm-controller is applying a newer release"}, nil
	}
	origins, ownerFile := w.origins(snap, rel, want, res.Fields)
	obs := observe.Observe(observe.Input{Kustomization: snap.Gov.Ref(), Policy: snap.Gov.Policy.Name, Revision: in.Revision,
		Live: w.live, Desired: want, Result: drift.Result{Fields: res.Fields}, Classifier: snap.Gov.Classifier,
		Attribute: w.attribute(), Origins: origins, OwnerFile: ownerFile, Now: now})
	w.g.retryAttribution(w.k, w.g.opts.Attributor != nil && evaluate.Unattributed(obs.Observation.Fields))
	obs.Observation.HelmRelease = ref
	in.Observation, in.WantHold, in.HoldFor = obs.Observation, obs.Hold, obs.HoldFor
	if rec != nil {
		in.Declared = decide.Declares(want, rec.Spec.Fields)
		in.Merged = func(f refluxv1.DriftField) bool { return decide.Declares(want, []refluxv1.DriftField{f}) }
		if len(res.Fields) == 0 {
			// Who put the chart's values back matters only once nothing
			// drifts (decide.LostToFlux).
			in.FluxApplied = evaluate.LastWrite(w.live.GetManagedFields(), w.g.opts.Owners.FluxOwned)
			in.Owners = w.owners(rec)
		}
	}
	return decide.Decide(in), nil
}

// upgrading reports whether helm-controller owns, live, the fields found
// to differ from the latest release it names, and no writer whose writes
// can be drift owns any: its upgrade writes the new release's objects
// before it records the release in the HelmRelease's status, and that
// window must not read as a person's drift (issue 19). A field a person
// removed is owned by nobody, and counts for neither.
func (w walk) upgrading(fields []drift.Field) bool {
	pointers := make([]string, 0, len(fields))
	for _, f := range fields {
		pointers = append(pointers, f.Pointer)
	}
	flux, writer, err := w.g.opts.Owners.FieldOwners(w.live, pointers)
	return err == nil && upgradeInFlight(flux, writer)
}

// upgradeInFlight is upgrading's rule: the differing fields are
// helm-controller's and no one else's.
func upgradeInFlight(helmOwned, writerOwned bool) bool { return helmOwned && !writerOwned }

// attribute names the person behind a field's write from the audit log.
func (w walk) attribute() observe.Attributor {
	a, live := w.g.opts.Attributor, w.live
	if a == nil {
		return nil
	}
	return func(manager string, at time.Time) observe.Who { return a.User(live, manager, at) }
}

// owners says who owns rec's fields live now: helm-controller's forced
// apply at an upgrade takes them, a person's revert keeps them.
func (w walk) owners(rec *refluxv1.Drift) decide.Owners {
	pointers := make([]string, 0, len(rec.Spec.Fields))
	for _, f := range rec.Spec.Fields {
		pointers = append(pointers, f.Pointer)
	}
	flux, writer, err := w.g.opts.Owners.FieldOwners(w.live, pointers)
	if err != nil {
		return decide.Owners{}
	}
	return decide.Owners{Flux: flux, Writer: writer}
}

// origins gives each field the values key behind it, where the mapper
// has found it, and the line of Git that sets the key; the mapper is
// asked for the rest, and brings the object back once it has them. It
// returns the HelmRelease's file too, which a rule's paths match.
func (w walk) origins(snap reverse.Snapshot, rel *made, want *unstructured.Unstructured,
	fields []drift.Field) (func(string) *refluxv1.FieldOrigin, string) {
	pointers := make([]string, 0, len(fields))
	for _, f := range fields {
		pointers = append(pointers, chartPointer(f))
	}
	obj := chart.ObjectKey{APIVersion: want.GetAPIVersion(), Kind: want.GetKind(), Namespace: want.GetNamespace(), Name: want.GetName()}
	found := w.g.mapper.results(rel, obj, pointers, w.k)
	in := w.gitValues(snap)
	in.patched = postRendererLines(w.hr, in.idx, in.hr, want)
	byPointer := make(map[string]int, len(fields))
	for i, f := range fields {
		byPointer[f.Pointer], byPointer[f.GitPointer] = i, i
	}
	return func(pointer string) *refluxv1.FieldOrigin {
		i, ok := byPointer[pointer]
		if !ok {
			return nil
		}
		res, ok := found[pointers[i]]
		if !ok {
			return nil // not found yet: the mapper brings the object back
		}
		return valuesOrigin(res, in, fields[i].GitValue, fields[i].LiveValue)
	}, observe.DeclaringFile(in.idx, in.hr)
}

// gitValues is where the render of the Kustomization that applies the
// HelmRelease sets its values; empty while there is none.
func (w walk) gitValues(snap reverse.Snapshot) gitValues {
	in := gitValues{postRendered: len(w.hr.Spec.PostRenderers) > 0}
	r := snap.Render
	if r == nil {
		return in
	}
	key := desired.ObjectKey{Group: helmv2.GroupVersion.Group, Kind: helmv2.HelmReleaseKind, Namespace: w.hr.Namespace, Name: w.hr.Name}
	if o, ok := r.Object(key); ok && r.Index != nil {
		in.idx, in.hr = r.Index, origin.RefOf(o)
		// Read only for a key spec.values does not set, and once.
		in.from = sync.OnceValue(func() []chart.ValuesFile {
			return observe.ValuesFromFiles(o, r.Index, func(kind, namespace, name string) (*unstructured.Unstructured, bool) {
				return r.Object(desired.ObjectKey{Kind: kind, Namespace: namespace, Name: name})
			})
		})
	}
	return in
}

// chartPointer is where the chart renders a field: its place in the
// release's object, or, for a list element only live has, its place in
// live, which the chart renders no value at.
func chartPointer(f drift.Field) string {
	if f.GitPointer == "" || strings.Contains(f.GitPointer, "/-") {
		return f.Pointer
	}
	return f.GitPointer
}
