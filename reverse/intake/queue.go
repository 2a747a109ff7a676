package intake

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/reflux-dev/reflux/reverse/drift"
)

// take returns and clears what is known of an object's queued changes;
// until done, the change is in flight.
func (in *Intake) take(k Key) Change {
	in.mu.Lock()
	defer in.mu.Unlock()
	c := in.pending[k]
	delete(in.pending, k)
	in.inflight[k] = c
	return c
}

// done ends the evaluation of a change take returned.
func (in *Intake) done(k Key) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.inflight, k)
}

// Sighting is when the earliest live change of an object not yet
// evaluated reached the watch: queued, in flight or parked. A resync that
// finds the drift before the live worker does records it with this time,
// so the change is still timed; zero when there is none.
func (in *Intake) Sighting(owner types.NamespacedName, k Key) time.Time {
	in.mu.Lock()
	defer in.mu.Unlock()
	c := in.pending[k].merge(in.inflight[k])
	if e := in.entries[owner]; e != nil {
		c = c.merge(e.parked[k])
	}
	return c.Seen
}

// The looks again at a change a permission refused start at denyWaitBase
// and double up to denyWaitMax.
const (
	denyWaitBase = 2 * time.Second
	denyWaitMax  = 5 * time.Minute
)

// NewDenyWait returns what spaces the looks again at a change a
// permission refused, per object: 2 seconds at first, doubling up to 5
// minutes. The Helm live path shares it, so a tenant's refusal is
// retried alike wherever its object comes from.
func NewDenyWait() workqueue.TypedRateLimiter[Key] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[Key](denyWaitBase, denyWaitMax)
}

// failed keeps a change whose evaluation failed. A refused permission
// (Deny) is looked at again slowly: a permission can come back with no
// event on the object, when an administrator grants it or when a
// restarted apiserver's authorizer catches up with its RBAC (seen in
// e2e/fleet), and the resync at the Kustomization's interval may be an
// hour away. Any other failure is retried with the queue's backoff.
func (in *Intake) failed(k Key, c Change, err error) {
	if in.Deny(c.Owner, k, err) {
		in.restore(k, c)
		in.live.AddAfter(k, in.denyWait.When(k))
		return
	}
	if errors.Is(err, drift.ErrStale) {
		// Evaluated against a copy older than the apiserver's: looked at
		// again once the cache has caught up (the queue's backoff starts
		// at milliseconds). The newer version's own event may never
		// come: reflux's hold is not a change the watch queues.
		in.opts.Log.V(1).Info("evaluated a stale copy; looking again", "object", k.String())
		in.restore(k, c)
		in.live.AddRateLimited(k)
		return
	}
	in.opts.Log.Error(err, "evaluating live change", "object", k.String())
	in.restore(k, c)
	in.live.AddRateLimited(k)
}

// restore puts a change back after a failed attempt, so the retry keeps
// its first sighting and its writers.
func (in *Intake) restore(k Key, c Change) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if newer, ok := in.pending[k]; ok {
		in.pending[k] = newer.merge(c)
	} else {
		in.pending[k] = c
	}
	// A retry may wait minutes in the queue's backoff: long enough for
	// Flux to revert what a hold would keep.
	in.queueHold(k, in.pending[k])
}

// again queues an object's change to be looked at after d, keeping c.
func (in *Intake) again(k Key, c Change, d time.Duration) {
	in.pending[k] = c.merge(in.pending[k])
	in.live.AddAfter(k, d)
}

func (in *Intake) processLive(ctx context.Context) bool {
	k, shutdown := in.live.Get()
	if shutdown {
		return false
	}
	defer in.live.Done(k)
	c := in.take(k)
	defer in.done(k)
	if err := in.opts.Handler.Handle(ctx, k, c, false); err != nil {
		in.failed(k, c, err)
		return true
	}
	in.Allow(c.Owner, k)
	in.live.Forget(k)
	in.denyWait.Forget(k)
	return true
}

// BurstBacklog is the live backlog that makes a burst: about a second of
// the live path's work at the rate a burst of 1,000 edits is recorded on
// two cores (issue 20 §3). A steady trickle of edits never builds one.
// While it lasts, the work the live path does not wait on (write-back,
// reporting) yields the apiserver and the cores to it.
const BurstBacklog = 100

// Backlog is how many live changes wait for a worker, on the live lane
// and the hold lane. Changes parked for a render, or waiting out a
// backoff, are not in it.
func (in *Intake) Backlog() int { return in.live.Len() + in.holds.Len() }

// Busy reports whether the live path is working through a burst.
func (in *Intake) Busy() bool { return in.Backlog() >= BurstBacklog }
