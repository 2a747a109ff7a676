package governor

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/observe"
	"github.com/reflux-dev/reflux/reverse/record"
)

// deleterRetries bounds how often a deletion waits for the audit log to
// name who deleted the object. The apiserver batches audit events (about a
// second here), so a few tries half a second apart cover the usual delay;
// after that the deletion is recorded without a user rather than kept
// from the record.
const deleterRetries = 6

// deletion decides for a governed object someone deleted. The applied
// revision still declaring the object is what tells a deletion apart from
// Flux's own garbage collection: kustomize-controller prunes only what a
// revision it is applying no longer renders, or everything when its
// Kustomization is deleted. A deletion seen while the render is not
// current is parked like any change, because it may be that prune.
//
// The record has one field, the whole object (the empty JSON pointer)
// removed, and no hold: nothing is left to hold, and Flux recreates the
// object at its next reconcile.
//
// It reports whether the change was kept for later.
func (gv *Governor) deletion(ctx context.Context, k objKey, c change) (bool, error) {
	kept, err := gv.decideDeletion(ctx, k, c)
	if !kept {
		// Decided (or given up): the next deletion of this object waits
		// for the audit log afresh.
		gv.mu.Lock()
		delete(gv.deleterTries, k)
		gv.mu.Unlock()
	}
	return kept, err
}

func (gv *Governor) decideDeletion(ctx context.Context, k objKey, c change) (bool, error) {
	last := c.deleted
	if snap, governed := gv.snapshotOf(c.owner); governed && !snap.gov.Kustomization.DeletionTimestamp.IsZero() {
		return false, nil // Flux garbage-collecting a deleted Kustomization
	}
	snap, governed, kept := gv.currentOrPark(k, c)
	if !governed || kept {
		return kept, nil
	}
	want, declared := snap.render.Object(desired.KeyOf(last))
	if !declared {
		return false, nil // pruned: the applied revision no longer renders it
	}
	deleter, known := gv.deleter(last, c.seen)
	if !known && gv.waitForDeleter(k, c) {
		return true, nil
	}
	if deleter.Flux {
		// kustomize-controller recreating an object whose immutable
		// field changed (spec.force), or pruning: Flux's own deletion.
		return false, nil
	}
	obs := deletionObservation(snap.gov, snap.render, want, last, deleter, c.seen, gv.now())
	ks := snap.gov.ref()
	obj := objectRef(k.GVK, last)
	name := record.Name(ks, obj)
	p := plan{name: name, namespace: ks.Namespace, obj: obj, ks: snap.gov.Kustomization, seen: c.seen, as: snap.gov.Identity}
	return false, gv.exec.withRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		return decide.Decide(decide.Input{Name: name, Record: rec, Live: decide.Live{}, Evaluated: true,
			Observation: obs, Now: gv.now()}), nil
	})
}

// Deleter is who deleted an object, from the audit log.
type Deleter struct {
	// User is the authenticated (or impersonated) user.
	User string
	// Flux is true when the request came from kustomize-controller.
	Flux bool
}

// deleter asks the audit log who deleted last.
func (gv *Governor) deleter(last *unstructured.Unstructured, at time.Time) (Deleter, bool) {
	if gv.opts.Attributor == nil {
		return Deleter{}, true // no audit log: nothing to wait for
	}
	return gv.opts.Attributor.Deleter(last, at)
}

// waitForDeleter looks at a deletion again shortly while the audit log has
// not named its user, keeping the change. It reports false once the tries
// are used up: the deletion is then recorded without a user.
func (gv *Governor) waitForDeleter(k objKey, c change) bool {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	if gv.deleterTries[k] >= deleterRetries {
		return false
	}
	gv.deleterTries[k]++
	gv.pending[k] = c.merge(gv.pending[k])
	gv.live.AddAfter(k, 500*time.Millisecond)
	return true
}

// deletionObservation is the observation of a deleted object: the whole
// object removed, at the document that declares it, classified by the
// policy (Alert, high, by default) and never held.
func deletionObservation(g *Governed, r *desired.Render, want, last *unstructured.Unstructured, who Deleter,
	seen, now time.Time) record.Observation {
	at := metav1.NewTime(firstOf(seen, now))
	f := refluxv1.DriftField{ChangeType: refluxv1.ChangeRemove,
		Modifier: &refluxv1.Modifier{Operation: "Delete", User: who.User, Time: &at}}
	return wholeObjectObservation(g, r, want, last, f, now)
}

// wholeObjectObservation is the observation of one field f at the whole
// object (a deletion, or a write whose content reflux does not read), at
// the document that declares it, classified by the policy and never held.
// obj is the object the record names.
func wholeObjectObservation(g *Governed, r *desired.Render, want, obj *unstructured.Unstructured, f refluxv1.DriftField,
	now time.Time) record.Observation {
	f.Pointer, f.FluxReverts = refluxv1.WholeObjectPointer, true
	// The name line of the document (or, for a generated object, where
	// its generator is declared) is the place a reviewer looks.
	f.Origin = observe.Origin(r.Index, origin.RefOf(want), "/metadata/name")
	fields := []refluxv1.DriftField{f}
	observe.Classify(g.Classifier, want.GetKind(), fields, false)
	return record.Observation{
		Kustomization: g.ref(),
		Policy:        g.Policy.Name,
		Object:        observe.ObjectRef(obj),
		Revision:      r.Revision,
		Fields:        fields,
		Now:           now,
	}
}

// firstOf returns the first of times that is set.
func firstOf(times ...time.Time) time.Time {
	for _, t := range times {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
