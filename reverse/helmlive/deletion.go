package helmlive

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/observe"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/release"
)

// deletion decides for an object of a governed release that was seen
// deleted, as the Kustomize live path decides a deletion: drift of the
// whole object when someone deleted what the release renders, with who
// and when, and never a hold, since nothing is left to hold.
// helm-controller's drift correction creates it again (mode enabled), or
// its next upgrade does.
//
// What is not drift is Helm's own deletion: an upgrade or a rollback
// drops what its manifest no longer renders, and an uninstall drops
// everything. Helm's storage says when one is under way
// (release.Settled), which is looked at again once the HelmRelease names
// the release Helm settled on (Released); the audit log, where there is
// one, names helm-controller as the deleter besides.
func (w walk) deletion(ctx context.Context, snap reverse.Snapshot, p *execute.Plan) error {
	last := w.deleted.last
	p.Kustomization = snap.Gov.Kustomization
	p.Object, p.Seen = intake.ObjectRef(w.k.GVK, last), w.deleted.seen
	rel, err := w.g.latest(ctx, w.hr)
	switch {
	case errors.Is(err, errNotYet):
		// Never installed: nothing of Helm's was deleted.
		w.g.forgetDeletion(w.k)
		return nil
	case err != nil:
		return fmt.Errorf("HelmRelease %s/%s: %w", w.hr.Namespace, w.hr.Name, err)
	}
	want, declared := rel.byKey[desired.KeyOf(last)]
	if !declared {
		// A leftover of an older release, or a hook: not what Helm keeps.
		w.g.forgetDeletion(w.k)
		return nil
	}
	switch err := release.Settled(ctx, w.g.opts.Storage, rel.ref); {
	case errors.Is(err, release.ErrGone):
		w.g.opts.Log.V(1).Info("a release's object deleted with the release", "object", objectName(p.Object), "why", err.Error())
		w.g.forgetDeletion(w.k)
		return nil
	case err != nil:
		// ErrBusy is looked at again as a release not named yet is.
		return fmt.Errorf("deleted %s: %w", objectName(p.Object), err)
	}
	var who reverse.Deleter
	if a := w.g.opts.Attributor; a != nil {
		var known bool
		who, known = a.Deleter(last, w.deleted.seen)
		if w.g.retryAttribution(w.k, !known) {
			return nil // the audit log's batch often names the deleter a moment later
		}
	}
	if who.Helm || who.Flux {
		w.g.forgetDeletion(w.k)
		return nil
	}
	ref := w.ref(rel.ref.String())
	p.HelmRelease = ref
	return w.g.opts.Executor.WithRecord(ctx, p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		now := w.g.opts.Now()
		rev := snap.Gov.Kustomization.Status.LastAppliedRevision
		obs := w.removed(snap, rel, want, who, rev)
		obs.HelmRelease = ref
		return decide.Decide(decide.Input{Name: p.Name, Record: rec, Live: decide.Live{}, Evaluated: true, Observation: obs,
			Revision: rev, Upgrade: w.hr.Namespace + "/" + w.hr.Name, Now: now}), nil
	})
}

// removed is the observation of the deleted object: one field, the whole
// object removed, at the line of Git that declares the HelmRelease and the
// chart's template that renders the object (which the mapper finds, and
// brings the deletion back to fill in).
func (w walk) removed(snap reverse.Snapshot, rel *made, want *unstructured.Unstructured, who reverse.Deleter, revision string) record.Observation {
	at := metav1.NewTime(w.deleted.seen)
	f := refluxv1.DriftField{Pointer: refluxv1.WholeObjectPointer, ChangeType: refluxv1.ChangeRemove, FluxReverts: true,
		Modifier: &refluxv1.Modifier{Operation: refluxv1.DeleteOperation, User: who.User, Time: &at}}
	in := w.gitValues(snap)
	if in.idx == nil {
		f.Origin = &refluxv1.FieldOrigin{Refused: "not-indexed",
			Why: "the tree of the Kustomization that applies the HelmRelease is not rendered yet"}
	} else if o := observe.Origin(in.idx, in.hr, "/metadata/name"); o != nil {
		f.Origin = o.DeepCopy()
	}
	const name = "/metadata/name"
	obj := chart.ObjectKey{APIVersion: want.GetAPIVersion(), Kind: want.GetKind(), Namespace: want.GetNamespace(), Name: want.GetName()}
	if res, ok := w.g.mapper.results(rel, obj, []string{name}, w.k)[name]; ok && res.Template.Line > 0 && f.Origin != nil {
		f.Origin.Template = fmt.Sprintf("%s:%d", res.Template.File, res.Template.Line)
	}
	fields := []refluxv1.DriftField{f}
	observe.Classify(snap.Gov.Classifier, want.GetKind(), observe.DeclaringFile(in.idx, in.hr), fields, false)
	return record.Observation{Kustomization: snap.Gov.Ref(), Policy: snap.Gov.Policy.Name, Object: observe.ObjectRef(w.deleted.last),
		Revision: revision, Fields: fields, Now: w.g.opts.Now()}
}
