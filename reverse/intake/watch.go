package intake

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// OnLiveUpdate is the live watches' update handler. It runs on the
// informer's goroutine, so it only classifies the writers and queues the
// object: it never blocks and never makes a request.
func (in *Intake) OnLiveUpdate(gvk schema.GroupVersionKind, old, cur *unstructured.Unstructured, seen time.Time) {
	owner := OwnerOf(cur)
	if !in.Governs(owner) {
		return
	}
	if old != nil && old.GetUID() != "" && cur.GetUID() != old.GetUID() {
		// Deleted and created again while the watch was away: an
		// informer that lists again after a gap (an apiserver restart,
		// 410 Gone) sees one object under the name, and reports an
		// update. The deletion is decided as if the watch had seen it.
		in.OnLiveDelete(gvk, old)
		return
	}
	c := Change{Owner: owner, Object: ObjectRef(gvk, cur), Seen: seen, Benign: true}
	if old != nil {
		c.From = old.GetResourceVersion()
	}
	writers := drift.Writers(old, cur)
	if len(writers) == 0 && !drift.StatusOnly(old, cur) {
		// Only a removal leaves no trace in managedFields: someone, not
		// Flux (which takes over what it declares), removed a field. A
		// status write in the same second as its writer's last leaves
		// none either, and is never drift (a controller's conditions,
		// reflux's own on a HelmRelease).
		c.Benign, c.Reverted = false, true
	}
	in.classify(&c, writers)
	if c.Reverted && len(writers) > 0 {
		// What was written, for when Flux undoes it before a worker
		// looks (Change.Edits): a pointer, not a copy.
		c.Edits = []*unstructured.Unstructured{cur}
	}
	in.enqueue(KeyOf(gvk, cur), c)
}

// OnLiveAdd is the live watches' add handler: an object listed as a watch
// starts, or created. One that a writer Flux reverts has written is a
// change no watch of this reflux saw being made: made while it was down,
// or before this replica led. It is taken as a live change at once, so it
// is held (and recorded as Pending) before Flux's next reconcile, which
// would otherwise erase it while the first render is still being built.
// The rest, Flux's own objects, cost nothing.
//
// An object reflux holds is taken too: the hold may have been taken ahead
// of the change's evaluation (the hold lane) by a replica that lost its
// lease before it wrote the record, and only this look finds the change
// then. It waits for nothing else: the resync, which would also find it,
// paces its dry runs over every rendered object and starts again at each
// failover (the soak saw such holds outlive the drain with no record).
// One whose record has seen its latest write is left to the resync
// (Change.Listed): after a failover there are thousands of those, and a
// dry run each kept the live queue 90 s behind the edits that came in
// meanwhile.
func (in *Intake) OnLiveAdd(gvk schema.GroupVersionKind, cur *unstructured.Unstructured, seen time.Time) {
	owner := OwnerOf(cur)
	if !in.Governs(owner) {
		return
	}
	_, ours := refluxv1.HeldBy(cur.GetAnnotations())
	if drift.Unreverted(cur) && !ours {
		// Held by a person, or merged by Flux: nothing Flux erases.
		return
	}
	c := Change{Owner: owner, Object: ObjectRef(gvk, cur), Seen: seen, Benign: true, Listed: ours}
	in.classify(&c, drift.Writers(nil, cur))
	if c.Reverted {
		in.enqueue(KeyOf(gvk, cur), c)
	}
}

// classify marks c as not benign when a writer's writes can be drift, and
// reverted when Flux reverts one of those.
func (in *Intake) classify(c *Change, writers []metav1.ManagedFieldsEntry) {
	benign, reverted := Classify(in.opts.Writers, writers)
	c.Benign = c.Benign && benign
	c.Reverted = c.Reverted || reverted
}

// Classify tells of writers (drift.Writers) whether all of them write
// what is never drift (benign), and whether Flux reverts what one of the
// others wrote (reverted).
func Classify(ws Writers, writers []metav1.ManagedFieldsEntry) (benign, reverted bool) {
	benign = true
	for _, w := range writers {
		if w.Subresource == "status" {
			continue // status is never drift, whoever writes it
		}
		if !ws.Allowed(w.Manager) {
			benign = false
			if ws.Reverted(w.Manager) {
				reverted = true
			}
		}
	}
	return benign, reverted
}

// OnLiveDelete is the live watches' delete handler. A deletion is queued
// like any change: it may be drift, and a record of the object may have a
// finalizer to let go of.
func (in *Intake) OnLiveDelete(gvk schema.GroupVersionKind, last *unstructured.Unstructured) {
	owner := OwnerOf(last)
	if !in.Governs(owner) {
		in.opts.Log.V(1).Info("deleted, not governed here", "object", KeyOf(gvk, last).String(), "owner", owner.String())
		in.enqueue(KeyOf(gvk, last), Change{Owner: owner, Object: ObjectRef(gvk, last)})
		return
	}
	in.opts.Log.V(1).Info("deleted", "object", KeyOf(gvk, last).String(), "uid", last.GetUID())
	in.enqueue(KeyOf(gvk, last), Change{Owner: owner, Object: ObjectRef(gvk, last), Seen: in.now(), Deleted: last})
}

// OnRecord is called for every change of a Drift record: a user may have
// dismissed or deleted it, so its object is looked at again.
func (in *Intake) OnRecord(d *refluxv1.Drift) {
	o := d.Spec.Object
	gvk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
	owner := types.NamespacedName{Namespace: d.Spec.Kustomization.Namespace, Name: d.Spec.Kustomization.Name}
	in.enqueue(Key{GVK: gvk, Namespace: o.Namespace, Name: o.Name}, Change{Owner: owner, Object: o})
}

// DeletionOf is the change a deletion written down as Pending
// (decide.PendingDeletion) stands for: the deletion of the object the
// record names, when and by whom it says. The governor replays it when it
// takes a Kustomization over, since the leader that wrote it may have
// died before its render landed, and Flux may have recreated the object.
func DeletionOf(d *refluxv1.Drift) (Key, Change) {
	o := d.Spec.Object
	gvk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
	last := &unstructured.Unstructured{}
	last.SetAPIVersion(o.APIVersion)
	last.SetKind(o.Kind)
	last.SetNamespace(o.Namespace)
	last.SetName(o.Name)
	last.SetUID(types.UID(o.UID))
	c := Change{Owner: types.NamespacedName{Namespace: d.Spec.Kustomization.Namespace, Name: d.Spec.Kustomization.Name},
		Object: o, Seen: d.Spec.FirstSeen.Time, Deleted: last}
	if m := d.Spec.LastModifier; m != nil {
		c.DeletedBy = m.User
		if m.Time != nil {
			c.Seen = m.Time.Time
		}
	}
	return Key{GVK: gvk, Namespace: o.Namespace, Name: o.Name}, c
}

// Governs reports whether a Kustomization is governed.
func (in *Intake) Governs(id types.NamespacedName) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.entries[id] != nil
}

// Replay queues a change no watch of this engine saw: a deletion the
// audit log names, which a predecessor may not have recorded
// (governor's replay).
func (in *Intake) Replay(k Key, c Change) {
	if !in.Governs(c.Owner) {
		return
	}
	in.enqueue(k, c)
}

// enqueue records a change and queues its object.
func (in *Intake) enqueue(k Key, c Change) {
	in.mu.Lock()
	in.pending[k] = c.merge(in.pending[k])
	in.queueHold(k, in.pending[k])
	in.mu.Unlock()
	in.live.Add(k)
}
