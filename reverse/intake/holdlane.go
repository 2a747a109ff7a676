package intake

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The hold lane holds, ahead of its evaluation, a live change that has
// waited in the live queue longer than HoldAfter. The live lane's cost
// per change is a dry run, a record's create and its status, and a
// hold; under a backlog (a new leader's first list after a failover, a
// burst of edits) a change waited behind hundreds of others for all of
// that, and Flux's next reconcile reverted some before their turn came
// (the soak, issue 22). A hold is one request, so this lane keeps up
// where the live lane cannot, and the evidence stays live until the live
// lane records it.
//
// It only acts on a change still queued: one a live worker took is that
// worker's to decide. The change stays queued, so the live lane
// evaluates it in its turn, with the hold in its cache, and releases a
// hold that the evaluation does not keep. The hold's own watch event
// queues nothing (decide.Meaningful): a worker that took the change while
// the hold went out finds its copy stale at the dry run, and the change
// is looked at again (failed).

// Preholder holds a queued live change's object before it is evaluated,
// or writes a queued deletion down (the governor).
type Preholder interface {
	// Prehold holds the object of a change, as its record will name it,
	// when it may be held and nothing else decides it now, or writes a
	// deletion down as a Pending record. It reports whether it held or
	// wrote.
	Prehold(ctx context.Context, k Key, c Change) (bool, error)
}

// DefaultHoldAfter is how long a live change waits in the queue before
// the hold lane holds it. In steady state the live lane takes a change
// within milliseconds, so the hold lane then never acts; half a second
// is far inside Flux's shortest reconcile interval.
const DefaultHoldAfter = 500 * time.Millisecond

// queueHold asks the hold lane to look at a change Flux would revert
// once it has waited HoldAfter. Called with in.mu held.
func (in *Intake) queueHold(k Key, c Change) {
	if in.opts.Preholder == nil || !laneDue(c) {
		return
	}
	in.holds.AddAfter(k, in.opts.HoldAfter)
}

// laneDue reports whether the hold lane acts on a change that has waited:
// one Flux would revert that nothing holds yet, or a deletion. Nothing is
// left to hold of a deleted object, and Flux recreates it at its next
// reconcile, after which no watch and no resync can tell it was ever
// gone: the lane writes the deletion down as a Pending record instead,
// so that a leader that dies before its turn does not lose it (the soak
// lost deletions a killed leader had seen, when the next leaders were
// processes started after them, whose audit stores knew nothing).
func laneDue(c Change) bool {
	switch {
	case c.Audited != nil:
		return false
	case c.Deleted != nil:
		return true
	}
	return c.Reverted && !c.Held
}

// holdDue returns the change of k if the hold lane should hold it: still
// queued, not taken by a live worker, Flux would revert it and nothing
// holds it yet.
func (in *Intake) holdDue(k Key) (Change, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	c, queued := in.pending[k]
	if _, taken := in.inflight[k]; !queued || taken || !laneDue(c) {
		return Change{}, false
	}
	if e := in.entries[c.Owner]; e != nil {
		if _, refused := e.denied[k]; refused {
			// The tenant may not act on it: a hold would be refused as
			// the evaluation was, and the denial is reported already.
			return Change{}, false
		}
	}
	return c, true
}

// markHeld notes on the change that its object is held, so that the live
// lane, and Forget, know a hold is theirs to keep or release. A live
// worker may have taken it while the hold went out: the in-flight entry
// is what Forget reads then.
func (in *Intake) markHeld(k Key) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, queued := in.pending[k]; queued {
		c.Held = true
		in.pending[k] = c
	} else if c, taken := in.inflight[k]; taken {
		c.Held = true
		in.inflight[k] = c
	}
}

// heldLocked adds to held the queued and in-flight changes of owner whose
// objects the hold lane held: Forget owes their release, as it does a
// parked change's, since no evaluation of a Kustomization no longer
// governed will release them. Called with in.mu held.
func (in *Intake) heldLocked(owner types.NamespacedName, held map[Key]Change) {
	for _, m := range []map[Key]Change{in.pending, in.inflight} {
		for k, c := range m {
			if c.Owner == owner && c.Held {
				held[k] = c.merge(held[k])
			}
		}
	}
}

func (in *Intake) processHold(ctx context.Context) bool {
	k, shutdown := in.holds.Get()
	if shutdown {
		return false
	}
	defer in.holds.Done(k)
	c, due := in.holdDue(k)
	if !due {
		return true
	}
	held, err := in.opts.Preholder.Prehold(ctx, k, c)
	if err != nil {
		// The live lane holds it in its turn, as without this lane.
		in.opts.Log.Error(err, "holding a queued change ahead of its evaluation", "object", k.String())
		return true
	}
	if held && c.Deleted == nil {
		in.markHeld(k)
	}
	return true
}
