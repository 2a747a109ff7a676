package governor

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// Flux's owner labels, on every object kustomize-controller applies; the
// live watches select on them.
const (
	FluxNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	FluxNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// change is what is known of the queued changes of one live object.
// Changes to one object coalesce: the earliest sighting and the union of
// what their writers were.
type change struct {
	// owner is the governing Kustomization, from the object's labels.
	owner types.NamespacedName
	// obj is the object as last seen, for an object deleted meanwhile.
	obj refluxv1.ObjectRef
	// seen is when the first change reached the watch; zero for a resync
	// or a record's change.
	seen time.Time
	// from is the resourceVersion before the first change, "" if unknown.
	from string
	// benign is true while every writer is one whose writes are never
	// drift (Flux, reflux, the control plane).
	benign bool
	// reverted is true when a writer is one Flux reverts, or unknown.
	reverted bool
	// held is true once the object was held before evaluation.
	held bool
	// deleted is the object as last seen when a watch saw it deleted: a
	// deletion is drift when the applied revision still declares it.
	deleted *unstructured.Unstructured
	// audited is the latest write to a Secret the audit log reported,
	// under --secrets=metadata, where no watch sees Secrets (secrets.go).
	audited *AuditedWrite
}

// merge folds an earlier change of the same object into c.
func (c change) merge(earlier change) change {
	if earlier.owner == (types.NamespacedName{}) {
		return c
	}
	out := c
	if !earlier.seen.IsZero() && (out.seen.IsZero() || earlier.seen.Before(out.seen)) {
		out.seen = earlier.seen
	}
	if earlier.from != "" {
		out.from = earlier.from
	}
	out.benign = c.benign && earlier.benign
	out.reverted = c.reverted || earlier.reverted
	out.held = c.held || earlier.held
	if out.deleted == nil {
		out.deleted = earlier.deleted
	}
	if out.audited == nil {
		out.audited = earlier.audited
	}
	return out
}

// ownerOf returns the Kustomization that applied a live object.
func ownerOf(u *unstructured.Unstructured) types.NamespacedName {
	l := u.GetLabels()
	return types.NamespacedName{Namespace: l[FluxNamespaceLabel], Name: l[FluxNameLabel]}
}

func keyOf(gvk schema.GroupVersionKind, u *unstructured.Unstructured) objKey {
	return objKey{GVK: gvk, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// OnLiveUpdate is the live watches' update handler. It runs on the
// informer's goroutine, so it only classifies the writers and queues the
// object: it never blocks and never makes a request.
func (gv *Governor) OnLiveUpdate(gvk schema.GroupVersionKind, old, cur *unstructured.Unstructured, seen time.Time) {
	owner := ownerOf(cur)
	if !gv.governs(owner) {
		return
	}
	c := change{owner: owner, obj: objectRef(gvk, cur), seen: seen, benign: true}
	if old != nil {
		c.from = old.GetResourceVersion()
	}
	writers := drift.Writers(old, cur)
	if len(writers) == 0 {
		// Only a removal leaves no trace in managedFields: someone, not
		// Flux (which takes over what it declares), removed a field.
		c.benign, c.reverted = false, true
	}
	for _, w := range writers {
		if !gv.opts.Detector.Allowed(w.Manager) {
			c.benign = false
		}
		if gv.opts.Detector.Reverted(w.Manager) && !gv.opts.Detector.Allowed(w.Manager) {
			c.reverted = true
		}
	}
	gv.enqueue(keyOf(gvk, cur), c)
}

// OnLiveDelete is the live watches' delete handler. A deletion is queued
// like any change: it may be drift (see deletion), and a record of the
// object may have a finalizer to let go of.
func (gv *Governor) OnLiveDelete(gvk schema.GroupVersionKind, last *unstructured.Unstructured) {
	owner := ownerOf(last)
	if !gv.governs(owner) {
		gv.enqueue(keyOf(gvk, last), change{owner: owner, obj: objectRef(gvk, last)})
		return
	}
	gv.enqueue(keyOf(gvk, last), change{owner: owner, obj: objectRef(gvk, last), seen: gv.now(), deleted: last})
}

// OnRecord is called for every change of a Drift record: a user may have
// dismissed or deleted it, so its object is looked at again.
func (gv *Governor) OnRecord(d *refluxv1.Drift) {
	o := d.Spec.Object
	gvk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
	owner := types.NamespacedName{Namespace: d.Spec.Kustomization.Namespace, Name: d.Spec.Kustomization.Name}
	gv.enqueue(objKey{GVK: gvk, Namespace: o.Namespace, Name: o.Name}, change{owner: owner, obj: o})
}

func objectRef(gvk schema.GroupVersionKind, u *unstructured.Unstructured) refluxv1.ObjectRef {
	return refluxv1.ObjectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: u.GetNamespace(),
		Name: u.GetName(), UID: string(u.GetUID())}
}

func (gv *Governor) governs(id types.NamespacedName) bool {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	return gv.entries[id] != nil
}

// enqueue records a change and queues its object.
func (gv *Governor) enqueue(k objKey, c change) {
	gv.mu.Lock()
	gv.pending[k] = c.merge(gv.pending[k])
	gv.mu.Unlock()
	gv.live.Add(k)
}

// take returns and clears what is known of an object's queued changes;
// until done, the change is in flight.
func (gv *Governor) take(k objKey) change {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	c := gv.pending[k]
	delete(gv.pending, k)
	gv.inflight[k] = c
	return c
}

// done ends the evaluation of a change take returned.
func (gv *Governor) done(k objKey) {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	delete(gv.inflight, k)
}

// sighting is when the earliest live change of an object not yet
// evaluated reached the watch: queued, in flight or parked. A resync that
// finds the drift before the live worker does records it with this time,
// so the change is still timed; zero when there is none.
func (gv *Governor) sighting(owner types.NamespacedName, k objKey) time.Time {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	c := gv.pending[k].merge(gv.inflight[k])
	if e := gv.entries[owner]; e != nil {
		c = c.merge(e.parked[k])
	}
	return c.seen
}

// failed keeps a change whose evaluation failed. A refused permission
// (deny) is not retried with backoff: the change stays on the live object,
// and the object's next change or the resync looks again. An audited
// change exists nowhere but here, so it is retried either way.
func (gv *Governor) failed(k objKey, c change, err error) {
	if gv.deny(c.owner, k, err) && c.audited == nil {
		gv.live.Forget(k)
		return
	}
	gv.opts.Log.Error(err, "evaluating live change", "object", k.String())
	gv.restore(k, c)
	gv.live.AddRateLimited(k)
}

// restore puts a change back after a failed attempt, so the retry keeps
// its first sighting and its writers.
func (gv *Governor) restore(k objKey, c change) {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	if newer, ok := gv.pending[k]; ok {
		gv.pending[k] = newer.merge(c)
	} else {
		gv.pending[k] = c
	}
}

func (gv *Governor) processLive(ctx context.Context) bool {
	k, shutdown := gv.live.Get()
	if shutdown {
		return false
	}
	defer gv.live.Done(k)
	c := gv.take(k)
	defer gv.done(k)
	if err := gv.handle(ctx, k, c, false); err != nil {
		gv.failed(k, c, err)
		return true
	}
	gv.allow(c.owner, k)
	gv.live.Forget(k)
	return true
}
