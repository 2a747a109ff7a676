package governor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/record"
)

// entry is the engine's state of one governed Kustomization. It is only
// touched under Governor.mu; workers take a snapshot.
type entry struct {
	gov    *Governed
	render *desired.Render
	// parked are changes waiting for a current render, by object.
	parked map[objKey]change
	// clean maps objects to the resourceVersion they were last evaluated
	// clean at, for the applied generation cleanFor: a resync skips them
	// while nothing but Flux or reflux wrote them since.
	clean    map[objKey]string
	cleanFor string
	// resyncFor is the render the last resync checked against, at when it
	// started; outstanding are the objects it has yet to check.
	resyncFor   string
	resyncAt    time.Time
	outstanding map[objKey]bool
	wb          wbState
	// denied are changes kept because the Kustomization's identity lacks
	// a permission (tenancy.go).
	denied map[objKey]denial
}

// snapshot is what a worker needs of an entry, read once.
type snapshot struct {
	gov     *Governed
	render  *desired.Render
	current bool
}

// Status is what the engine knows of a Kustomization, for its conditions.
type Status struct {
	// Current is true when the render of the applied revision is what
	// live changes are evaluated against.
	Current bool
	// RollingOut is true while Flux applies a revision or spec reflux has
	// not rendered: live changes wait (and are held where Flux reverts).
	RollingOut bool
	// Parked counts changes waiting for a current render; Held those of
	// them held meanwhile.
	Parked, Held int
	// Checked is true once every rendered object was checked against the
	// current render; Unchecked counts those still to check.
	Checked   bool
	Unchecked int
	// WriteBack is the last write-back's outcome, if one ran.
	WriteBack *WriteBackStatus
	// Denied are the changes kept because the Kustomization's identity
	// lacks a permission, by object.
	Denied []Denial
}

// RollingOut reports whether Flux is applying something reflux has not
// rendered: a spec it has not reconciled yet, or a source revision newer
// than the applied one while it has not failed (a failed Kustomization
// keeps the applied revision live, so that is what reflux compares with).
func RollingOut(g *Governed) bool {
	ks := g.Kustomization
	if ks.Spec.Suspend {
		return false
	}
	if ks.Generation != ks.Status.ObservedGeneration {
		return true
	}
	return g.SourceRevision != "" && g.SourceRevision != ks.Status.LastAppliedRevision &&
		!conditions.IsFalse(ks, meta.ReadyCondition)
}

// isCurrent reports whether render is what the Kustomization applied.
func isCurrent(g *Governed, render *desired.Render) bool {
	ks := g.Kustomization
	return render != nil && render.Revision == ks.Status.LastAppliedRevision &&
		render.Generation == ks.Generation && !RollingOut(g)
}

// Publish makes g the governed state of its Kustomization, with render the
// latest render the caller has (nil while none is ready). When the render
// is current, parked changes go to the live queue and a resync starts if
// one is due. It never waits on slow work.
func (gv *Governor) Publish(g *Governed, render *desired.Render) Status {
	id := g.Key()
	gv.mu.Lock()
	defer gv.mu.Unlock()
	e := gv.entries[id]
	if e == nil {
		// Branches are unknown until checked: a restart may find one whose
		// records all closed while reflux was down, which must not go on
		// proposing them (issue 17), so the first report checks.
		e = &entry{parked: map[objKey]change{}, clean: map[objKey]string{}, outstanding: map[objKey]bool{}, wb: wbState{branches: true}}
		gv.entries[id] = e
	}
	e.gov = g
	if render != nil {
		e.render = render
	}
	if cleanFor := fmt.Sprintf("%d/%d", g.Kustomization.Generation, g.Policy.Generation); e.cleanFor != cleanFor {
		// Another spec or policy can change what drifts (ignore rules,
		// patches), so what was clean is not any more.
		e.clean, e.cleanFor = map[objKey]string{}, cleanFor
	}
	if isCurrent(g, e.render) {
		gv.flushLocked(e)
		gv.resyncLocked(e)
	}
	gv.opts.Metrics.setParked(id, len(e.parked))
	return gv.statusLocked(e)
}

// Status returns what the engine knows of a Kustomization.
func (gv *Governor) Status(id types.NamespacedName) (Status, bool) {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	e := gv.entries[id]
	if e == nil {
		return Status{}, false
	}
	return gv.statusLocked(e), true
}

func (gv *Governor) statusLocked(e *entry) Status {
	s := Status{Current: isCurrent(e.gov, e.render), RollingOut: RollingOut(e.gov), Parked: len(e.parked),
		Unchecked: len(e.outstanding)}
	for _, c := range e.parked {
		if c.held {
			s.Held++
		}
	}
	s.Checked = s.Current && e.resyncFor == renderKey(e.gov, e.render) && len(e.outstanding) == 0
	if w := e.wb.last; w != nil {
		c := *w
		s.WriteBack = &c
	}
	s.Denied = e.denials()
	return s
}

// flushLocked sends parked changes to the live queue.
func (gv *Governor) flushLocked(e *entry) {
	for k, c := range e.parked {
		gv.pending[k] = c.merge(gv.pending[k])
		gv.live.Add(k)
	}
	if len(e.parked) > 0 {
		gv.opts.Log.Info("evaluating changes kept while the render was not current",
			"kustomization", e.gov.Key().String(), "changes", len(e.parked), "revision", e.render.Revision)
	}
	e.parked = map[objKey]change{}
	if len(gv.unowned) > 0 {
		gv.rerouteSecretsLocked()
	}
}

// Forget stops governing a Kustomization, everywhere at once: its state,
// queued write-back, metrics, live watches and renders are dropped, and
// holds taken for changes that were never evaluated are released (no
// record decides to keep them). It is the one way to stop governing.
func (gv *Governor) Forget(ctx context.Context, id types.NamespacedName) {
	gv.mu.Lock()
	e := gv.entries[id]
	delete(gv.entries, id)
	if len(gv.unowned) > 0 {
		// Writes that waited on this render may have no owner now.
		gv.rerouteSecretsLocked()
	}
	gv.mu.Unlock()
	gv.wb.forget(id)
	gv.opts.Metrics.forget(id)
	gv.opts.Live.Forget(id)
	if gv.opts.Renders != nil {
		gv.opts.Renders.Forget(id)
	}
	if e == nil {
		return
	}
	// The holds were taken as the Kustomization's identity, so they are
	// released as it too, never as reflux. Whatever cannot be released is
	// named, with what an operator runs to do it: a stuck hold keeps Flux
	// off the object.
	holder, holderErr := gv.exec.holderFor(e.gov.Identity)
	for k, c := range e.parked {
		if !c.held {
			continue
		}
		obj := refluxv1.ObjectRef{APIVersion: k.GVK.GroupVersion().String(), Kind: k.GVK.Kind, Namespace: k.Namespace, Name: k.Name}
		if holderErr != nil {
			gv.opts.Log.Error(holderErr, "a hold taken before evaluation is left in place: release it by hand",
				"object", k.String(), "release", releaseCommand(obj))
			continue
		}
		name := record.Name(e.gov.ref(), obj)
		err := gv.opts.Client.Get(ctx, types.NamespacedName{Namespace: id.Namespace, Name: name}, &refluxv1.Drift{})
		switch {
		case err == nil:
			continue // a record owns the hold now
		case !apierrors.IsNotFound(err):
			gv.opts.Log.Error(err, "a hold taken before evaluation is left in place: no telling whether record "+name+
				" owns it; release it by hand if not", "object", k.String(), "release", releaseCommand(obj))
			continue
		}
		if err := holder.Release(ctx, obj); err != nil {
			gv.opts.Log.Error(err, "releasing a hold taken before evaluation", "object", k.String(), "release", releaseCommand(obj))
		}
	}
}

// releaseCommand is the kubectl command that lifts a hold by hand.
func releaseCommand(obj refluxv1.ObjectRef) string {
	kind := obj.Kind
	if gv := schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind); gv.Group != "" {
		kind += "." + gv.Group
	}
	return fmt.Sprintf("kubectl -n %s annotate %s/%s %s- %s- %s-", obj.Namespace, strings.ToLower(kind), obj.Name,
		refluxv1.ReconcileAnnotation, refluxv1.HeldByAnnotation, refluxv1.HeldSinceAnnotation)
}

// snapshotOf returns a Kustomization's state for a worker.
func (gv *Governor) snapshotOf(id types.NamespacedName) (snapshot, bool) {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	e := gv.entries[id]
	if e == nil {
		return snapshot{}, false
	}
	return snapshot{gov: e.gov, render: e.render, current: isCurrent(e.gov, e.render)}, true
}

// currentOrPark returns the snapshot of c's owner to decide c against:
// current, or made current meanwhile. Otherwise c is parked until it is,
// and kept is true; governed is false once the owner is not governed.
func (gv *Governor) currentOrPark(k objKey, c change) (snap snapshot, governed, kept bool) {
	snap, governed = gv.snapshotOf(c.owner)
	if !governed || snap.current {
		return snap, governed, false
	}
	if !gv.park(c.owner, k, c) {
		return snapshot{}, true, true
	}
	snap, governed = gv.snapshotOf(c.owner)
	return snap, governed, false
}

// park keeps a change until the render is current. It reports whether the
// render became current meanwhile, in which case the caller evaluates.
func (gv *Governor) park(id types.NamespacedName, k objKey, c change) bool {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	e := gv.entries[id]
	if e == nil {
		return false
	}
	if isCurrent(e.gov, e.render) {
		return true
	}
	e.parked[k] = c.merge(e.parked[k])
	gv.opts.Metrics.setParked(id, len(e.parked))
	return false
}

// isParked reports whether an object has a change parked.
func (gv *Governor) isParked(id types.NamespacedName, k objKey) bool {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	e := gv.entries[id]
	if e == nil {
		return false
	}
	_, ok := e.parked[k]
	return ok
}

// markClean records that an object was evaluated clean at rv, or, with
// from set, that it stays clean: it was clean at from and only Flux,
// reflux or the control plane wrote it since.
func (gv *Governor) markClean(id types.NamespacedName, k objKey, from, rv string) {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	e := gv.entries[id]
	if e == nil {
		return
	}
	if from != "" && e.clean[k] != from {
		return
	}
	e.clean[k] = rv
}

// forgetClean drops an object from the clean set.
func (gv *Governor) forgetClean(id types.NamespacedName, k objKey) {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	if e := gv.entries[id]; e != nil {
		delete(e.clean, k)
	}
}

// isClean reports whether an object is known clean at rv.
func (gv *Governor) isClean(id types.NamespacedName, k objKey, rv string) bool {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	e := gv.entries[id]
	return e != nil && rv != "" && e.clean[k] == rv
}

// entryCount is the number of governed Kustomizations.
func (gv *Governor) entryCount() int {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	return len(gv.entries)
}
