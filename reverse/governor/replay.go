package governor

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Deletions names when an object was last deleted, from the audit log
// (attribution.Audit). Every replica's audit store keeps deletions,
// leading or not (internal/audit.Store.Keep).
type Deletions interface {
	DeletedSince(obj *unstructured.Unstructured, since time.Time) (time.Time, bool)
}

// replayWindow is how far back a new leader looks for deletions its
// predecessor may have missed: the audit store's own TTL, beyond which
// it knows nothing anyway.
const replayWindow = 15 * time.Minute

// replayable reports whether the deletion of a rendered object the audit
// log saw at deletedAt is one a new leader must decide again: the object
// is gone, or what is live was created at or after the deletion (Flux
// recreated it, and no watch of this leader saw it go). managedFields and
// creationTimestamp keep the second only, so an object created in the
// second of the deletion counts as recreated. A deletion the predecessor
// did record is decided again to the same record (the executor merges
// it, and a closed one saw that write, decide.Pending's sawWrite).
func replayable(deletedAt time.Time, live *unstructured.Unstructured, exists bool) bool {
	if !exists {
		return true
	}
	created := live.GetCreationTimestamp().Time
	return !created.Before(deletedAt.Truncate(time.Second))
}

// markReplay queues the replay of a Kustomization's deletions the first
// time its render is current in this engine: a replica that takes over
// knows nothing of the deletions its predecessor's watches saw and its
// queue had not decided when it lost its lease. Flux recreates such an
// object at its next reconcile, so neither the new leader's watches
// (which list what exists) nor its resync (which finds what is missing)
// would ever see it (issue 22 §1: the soak's "deleted live, and no record
// says so").
func (gv *Governor) markReplay(id types.NamespacedName) { gv.once(gv.replayed, gv.replays, id) }

// markWriteDown queues, the first time a Kustomization is governed in
// this engine, the writing down of the deletions of its inventory the
// audit log saw (writeDown), before any render.
func (gv *Governor) markWriteDown(id types.NamespacedName) { gv.once(gv.wroteDown, gv.writeDowns, id) }

// once queues id on q unless done says it was queued since it was last
// governed.
func (gv *Governor) once(done map[types.NamespacedName]bool, q workqueue.TypedRateLimitingInterface[types.NamespacedName],
	id types.NamespacedName) {
	gv.replayMu.Lock()
	defer gv.replayMu.Unlock()
	if done[id] {
		return
	}
	done[id] = true
	q.Add(id)
}

// forgetReplay lets a Kustomization governed again replay again.
func (gv *Governor) forgetReplay(id types.NamespacedName) {
	gv.replayMu.Lock()
	defer gv.replayMu.Unlock()
	delete(gv.replayed, id)
	delete(gv.wroteDown, id)
}

// runReplays runs fn for the Kustomizations queued on q until ctx ends,
// again later for one fn reports not done.
func (gv *Governor) runReplays(ctx context.Context, q workqueue.TypedRateLimitingInterface[types.NamespacedName],
	fn func(context.Context, types.NamespacedName) bool) {
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	for {
		id, shutdown := q.Get()
		if shutdown {
			return
		}
		if !fn(ctx, id) {
			q.AddRateLimited(id)
		} else {
			q.Forget(id)
		}
		q.Done(id)
	}
}

// writeDown writes down, as Pending records, the deletions of id's
// inventory the audit log saw within replayWindow, of objects gone or
// created since, that Flux did not make; the first time id is governed
// in this engine, without waiting for its render. The replay above
// decides them once the render is current, but a new leader's render of
// a large Kustomization takes tens of seconds, and under repeated
// failovers the leaders died before theirs landed: the deletions made
// while none led were then held only in the memory of replicas that
// died in turn (the soak lost some 180 deletions a run so). Written down,
// any later leader replays them from the records (writtenDown). It reads
// the objects from the apiserver: no watch of the render's kinds runs
// yet. It reports false to be tried again when a read or write failed.
func (gv *Governor) writeDown(ctx context.Context, id types.NamespacedName) bool {
	snap, governed := gv.intake.Snapshot(id)
	if !governed || gv.opts.Deletions == nil || snap.Gov.Kustomization.Status.Inventory == nil ||
		!snap.Gov.Kustomization.DeletionTimestamp.IsZero() {
		return true
	}
	since, n := gv.now().Add(-replayWindow), 0
	for _, e := range snap.Gov.Kustomization.Status.Inventory.Entries {
		obj, err := inventoryObject(e.ID, e.Version)
		if err != nil {
			continue // not one Flux wrote; nothing to replay
		}
		at, deleted := gv.opts.Deletions.DeletedSince(obj, since)
		if !deleted {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		objects := gv.opts.Objects
		if objects == nil {
			objects = gv.opts.APIReader
		}
		err = objects.Get(ctx, client.ObjectKeyFromObject(obj), live)
		if err != nil && !apierrors.IsNotFound(err) {
			gv.opts.Log.Error(err, "reading an object the audit log saw deleted; trying again", "kustomization", id.String())
			return false
		}
		if !replayable(at, live, err == nil) {
			continue
		}
		k := intake.Key{GVK: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
		c := intake.Change{Owner: id, Object: intake.ObjectRef(k.GVK, obj), Seen: at, Deleted: obj}
		deleter, _ := gv.deleter(obj, c)
		if deleter.Flux {
			continue // a prune
		}
		if err := gv.writePendingDeletion(ctx, k, c, snap, deleter); err != nil {
			gv.opts.Log.Error(err, "writing down a deletion the audit log saw; trying again", "object", k.String())
			return false
		}
		n++
	}
	if n > 0 {
		gv.opts.Log.Info("deletions the audit log saw written down on taking over, before the render", "kustomization", id.String(), "objects", n)
	}
	return true
}

// inventoryObject is the object an entry of a Kustomization's inventory
// names, with no more than its kind, namespace and name.
func inventoryObject(id, version string) (*unstructured.Unstructured, error) {
	m, err := object.ParseObjMetadata(id)
	if err != nil {
		return nil, fmt.Errorf("parsing inventory entry %q: %w", id, err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: m.GroupKind.Group, Version: version, Kind: m.GroupKind.Kind})
	obj.SetNamespace(m.Namespace)
	obj.SetName(m.Name)
	return obj, nil
}

// replay hands the intake, as deletions to decide, what says an object
// of id went while no watch of this engine looked: the deletions id's
// records say were written down and not decided (pendingDeletion,
// predelete), the rendered objects the audit log saw deleted within
// replayWindow that replayable says are to be decided again, and the
// rendered objects Flux applied that are not live. It reports false while
// a watch of the render's kinds has not listed yet, or the records cannot
// be read.
func (gv *Governor) replay(ctx context.Context, id types.NamespacedName) bool {
	snap, governed := gv.intake.Snapshot(id)
	if !governed || !snap.Current || snap.Render == nil {
		return true // let go of, or published again later
	}
	keys, changes, err := gv.writtenDown(ctx, id)
	if err != nil {
		gv.opts.Log.Error(err, "reading the deletions written down before this replica led; trying again", "kustomization", id.String())
		return false
	}
	written, missing := len(keys), 0
	since := gv.now().Add(-replayWindow)
	for _, want := range snap.Render.Objects {
		gvk := want.GroupVersionKind()
		if drift.DesiredSkip(want) != "" {
			continue // Flux does not (re)create it either
		}
		if !gv.opts.Live.Synced(gvk) {
			return false
		}
		live, exists := gv.opts.Live.Get(gvk, want.GetNamespace(), want.GetName())
		var at time.Time
		deleted := false
		if gv.opts.Deletions != nil {
			at, deleted = gv.opts.Deletions.DeletedSince(want, since)
		}
		switch {
		case deleted && replayable(at, live, exists):
		case !exists && gv.opts.Live.Complete(gvk, want.GetNamespace()) && reverse.Applied(snap.Gov.Kustomization, want):
			// Declared, applied, and gone, with nothing saying when:
			// deleted while no replica led. The resync would find it
			// too, but paced over every rendered object, and Flux
			// recreates it at its next reconcile.
			at, missing = gv.now(), missing+1
		default:
			continue
		}
		keys = append(keys, intake.Key{GVK: gvk, Namespace: want.GetNamespace(), Name: want.GetName()})
		changes = append(changes, intake.Change{Owner: id, Object: intake.ObjectRef(gvk, want), Seen: at, Deleted: want.DeepCopy()})
	}
	for i := range keys {
		gv.intake.Replay(keys[i], changes[i])
	}
	if len(keys) > 0 {
		gv.opts.Log.Info("deletions replayed on taking over", "kustomization", id.String(), "objects", len(keys),
			"writtenDown", written, "missing", missing, "auditLog", len(keys)-written-missing)
	}
	return true
}

// writtenDown returns, as deletions to decide, id's records of deletions
// written down as Pending: the leader that wrote one may have died before
// its render landed, and Flux recreates the object at its next
// reconcile, after which neither a watch nor the audit store of a replica
// started since can tell it went (the soak lost deletions so).
func (gv *Governor) writtenDown(ctx context.Context, id types.NamespacedName) ([]intake.Key, []intake.Change, error) {
	var list refluxv1.DriftList
	if err := gv.opts.Client.List(ctx, &list, client.InNamespace(id.Namespace),
		client.MatchingLabels{record.KustomizationNameLabel: id.Name, record.KustomizationNamespaceLabel: id.Namespace}); err != nil {
		return nil, nil, fmt.Errorf("listing the drift records of %s: %w", id, err)
	}
	var keys []intake.Key
	var changes []intake.Change
	for i := range list.Items {
		d := &list.Items[i]
		if !decide.PendingDeletion(d) || !gv.IsSealed(d) {
			continue
		}
		k, c := intake.DeletionOf(d)
		keys, changes = append(keys, k), append(changes, c)
	}
	return keys, changes, nil
}

// newReplays is a queue of Kustomizations whose deletions are to be
// replayed or written down.
func newReplays(name string) workqueue.TypedRateLimitingInterface[types.NamespacedName] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: name})
}
