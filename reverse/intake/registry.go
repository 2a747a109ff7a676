package intake

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/desired"
)

// entry is the intake's state of one governed Kustomization. It is only
// touched under Intake.mu; workers take a Snapshot.
type entry struct {
	gov    *reverse.Governed
	render *desired.Render
	// parked are changes waiting for a current render, by object.
	parked map[Key]Change
	// clean maps objects to the resourceVersion they were last evaluated
	// clean at, for the applied generation cleanFor: a resync skips them
	// while nothing but Flux or reflux wrote them since.
	clean    map[Key]string
	cleanFor string
	// resyncFor is the render the last resync checked against, at when it
	// started; outstanding are the objects it has yet to check.
	resyncFor   string
	resyncAt    time.Time
	outstanding map[Key]bool
	// denied are changes kept because the Kustomization's identity lacks
	// a permission (tenancy.go).
	denied map[Key]denial
}

// Status is what the intake knows of a Kustomization, for its conditions.
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
	// Denied are the changes kept because the Kustomization's identity
	// lacks a permission, by object.
	Denied []Denial
}

// Publish makes g the governed state of its Kustomization, with render the
// latest render the caller has (nil while none is ready). When the render
// is current, parked changes go to the live queue and a resync starts if
// one is due. It never waits on slow work.
func (in *Intake) Publish(g *reverse.Governed, render *desired.Render) Status {
	id := g.Key()
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.entries[id]
	if e == nil {
		e = &entry{parked: map[Key]Change{}, clean: map[Key]string{}, outstanding: map[Key]bool{}}
		in.entries[id] = e
	}
	e.gov = g
	if render != nil {
		e.render = render
	}
	if cleanFor := fmt.Sprintf("%d/%d", g.Kustomization.Generation, g.Policy.Generation); e.cleanFor != cleanFor {
		// Another spec or policy can change what drifts (ignore rules,
		// patches), so what was clean is not any more.
		e.clean, e.cleanFor = map[Key]string{}, cleanFor
	}
	if reverse.IsCurrent(g, e.render) {
		in.flushLocked(e)
		in.resyncLocked(e)
	} else {
		in.flushUsableLocked(e)
	}
	in.setParked(id, len(e.parked))
	return in.statusLocked(e)
}

// flushUsableLocked sends the parked changes that an older render can
// evaluate now (reverse.Snapshot.Usable) to the live queue: a newer
// revision's tree arrived, and leaves their objects as they were.
func (in *Intake) flushUsableLocked(e *entry) {
	snap := e.snapshot()
	n := 0
	for k, c := range e.parked {
		if usable(snap, k, c) {
			in.pending[k] = c.merge(in.pending[k])
			in.live.Add(k)
			delete(e.parked, k)
			n++
		}
	}
	if n > 0 {
		in.opts.Log.Info("evaluating changes against an older render that still describes their objects",
			"kustomization", e.gov.Key().String(), "changes", n, "render", e.render.Revision,
			"applied", e.gov.Kustomization.Status.LastAppliedRevision)
	}
}

// usable reports whether c can be evaluated against snap. Deletions and
// audited Secret writes wait for the current render: whether Flux or a
// person deleted an object depends on what the revision Flux applies
// declares.
func usable(snap reverse.Snapshot, k Key, c Change) bool {
	return c.Deleted == nil && c.Audited == nil &&
		snap.Usable(desired.ObjectKey{Group: k.GVK.Group, Kind: k.GVK.Kind, Namespace: k.Namespace, Name: k.Name})
}

func (e *entry) snapshot() reverse.Snapshot {
	return reverse.Snapshot{Gov: e.gov, Render: e.render, Current: reverse.IsCurrent(e.gov, e.render)}
}

// Status returns what the intake knows of a Kustomization.
func (in *Intake) Status(id types.NamespacedName) (Status, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.entries[id]
	if e == nil {
		return Status{}, false
	}
	return in.statusLocked(e), true
}

func (in *Intake) statusLocked(e *entry) Status {
	s := Status{Current: reverse.IsCurrent(e.gov, e.render), RollingOut: reverse.RollingOut(e.gov), Parked: len(e.parked),
		Unchecked: len(e.outstanding)}
	for _, c := range e.parked {
		if c.Held {
			s.Held++
		}
	}
	s.Checked = s.Current && e.resyncFor == renderKey(e.gov, e.render) && len(e.outstanding) == 0
	s.Denied = e.denials()
	return s
}

// flushLocked sends parked changes to the live queue.
func (in *Intake) flushLocked(e *entry) {
	for k, c := range e.parked {
		in.pending[k] = c.merge(in.pending[k])
		in.live.Add(k)
	}
	if len(e.parked) > 0 {
		in.opts.Log.Info("evaluating changes kept while the render was not current",
			"kustomization", e.gov.Key().String(), "changes", len(e.parked), "revision", e.render.Revision)
	}
	e.parked = map[Key]Change{}
	if len(in.unowned) > 0 {
		in.rerouteSecretsLocked()
	}
}

// Forgotten is what a Kustomization that stopped being governed left in
// the intake: the changes it had parked, and those the hold lane held
// while they waited in the queue, for their holds to be released.
type Forgotten struct {
	Gov    *reverse.Governed
	Parked map[Key]Change
}

// Forget stops governing a Kustomization in the intake, and returns what
// it left; false when it was not governed.
func (in *Intake) Forget(id types.NamespacedName) (Forgotten, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.entries[id]
	delete(in.entries, id)
	if len(in.unowned) > 0 {
		// Writes that waited on this render may have no owner now.
		in.rerouteSecretsLocked()
	}
	if e == nil {
		return Forgotten{}, false
	}
	if e.parked == nil {
		e.parked = map[Key]Change{}
	}
	in.heldLocked(id, e.parked)
	return Forgotten{Gov: e.gov, Parked: e.parked}, true
}

// Snapshot returns a Kustomization's state for a worker.
func (in *Intake) Snapshot(id types.NamespacedName) (reverse.Snapshot, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.entries[id]
	if e == nil {
		return reverse.Snapshot{}, false
	}
	return e.snapshot(), true
}

// CurrentOrPark returns the snapshot of c's owner to decide c against:
// current, or made current meanwhile. Otherwise c is parked until it is,
// and kept is true; governed is false once the owner is not governed.
func (in *Intake) CurrentOrPark(k Key, c Change) (snap reverse.Snapshot, governed, kept bool) {
	snap, governed = in.Snapshot(c.Owner)
	if !governed || snap.Current {
		return snap, governed, false
	}
	if !in.Park(c.Owner, k, c) {
		return reverse.Snapshot{}, true, true
	}
	snap, governed = in.Snapshot(c.Owner)
	return snap, governed, false
}

// Park keeps a change until the render is current, or a render that
// describes its object arrives. It reports whether one is there already,
// in which case the caller evaluates.
func (in *Intake) Park(id types.NamespacedName, k Key, c Change) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.entries[id]
	if e == nil {
		return false
	}
	if snap := e.snapshot(); snap.Current || usable(snap, k, c) {
		return true
	}
	e.parked[k] = c.merge(e.parked[k])
	in.setParked(id, len(e.parked))
	return false
}

// IsParked reports whether an object has a change parked.
func (in *Intake) IsParked(id types.NamespacedName, k Key) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.entries[id]
	if e == nil {
		return false
	}
	_, ok := e.parked[k]
	return ok
}

// MarkClean records that an object was evaluated clean at rv, or, with
// from set, that it stays clean: it was clean at from and only Flux,
// reflux or the control plane wrote it since.
func (in *Intake) MarkClean(id types.NamespacedName, k Key, from, rv string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.entries[id]
	if e == nil {
		return
	}
	if from != "" && e.clean[k] != from {
		return
	}
	e.clean[k] = rv
}

// ForgetClean drops an object from the clean set.
func (in *Intake) ForgetClean(id types.NamespacedName, k Key) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if e := in.entries[id]; e != nil {
		delete(e.clean, k)
	}
}

// IsClean reports whether an object is known clean at rv.
func (in *Intake) IsClean(id types.NamespacedName, k Key, rv string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.entries[id]
	return e != nil && rv != "" && e.clean[k] == rv
}

// ForgetGone drops what is kept of a live object that is gone, and
// reports its owner's snapshot, if governed. A parked audited change
// stays: it came from the audit log, not from the live object, and a
// Secret reflux does not watch (--secrets=metadata) is never in the live
// store, so a resync of it always finds it "gone".
func (in *Intake) ForgetGone(owner types.NamespacedName, k Key) (reverse.Snapshot, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.attributionTries, k) // nothing left to attribute
	e := in.entries[owner]
	if e == nil {
		return reverse.Snapshot{}, false
	}
	if pc, ok := e.parked[k]; ok && pc.Audited == nil {
		delete(e.parked, k)
	}
	delete(e.clean, k)
	return e.snapshot(), true
}

func (in *Intake) setParked(id types.NamespacedName, n int) {
	if in.opts.Metrics != nil {
		in.opts.Metrics.SetParked(id, n)
	}
}
