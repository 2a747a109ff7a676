package intake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// syncWaitMax caps how long a resync item waits between looks at a watch
// that has not synced.
const syncWaitMax = 30 * time.Second

// renderKey names what a resync checks against: the render and the policy.
func renderKey(g *reverse.Governed, r *desired.Render) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%s@%d@%d", r.Revision, r.Generation, g.Policy.Generation)
}

// resyncLocked starts a resync of a Kustomization whose render is
// current, when one is due: the render (or policy) is new, or its interval
// has passed since the last one started. The resync is the safety net for
// changes the watch could not see, such as those made while reflux was
// down; it runs on its own workers, behind the live path.
func (in *Intake) resyncLocked(e *entry) {
	key := renderKey(e.gov, e.render)
	interval := e.gov.Kustomization.Spec.Interval.Duration
	now := in.now()
	if e.resyncFor == key && (len(e.outstanding) > 0 || interval <= 0 || now.Sub(e.resyncAt) < interval) {
		return
	}
	id := e.gov.Key()
	e.resyncFor, e.resyncAt = key, now
	e.outstanding = make(map[Key]bool, len(e.render.Objects))
	for _, o := range e.render.Objects {
		k := Key{GVK: o.GroupVersionKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
		e.outstanding[k] = true
		in.resyncItems[k] = Change{Owner: id, Object: ObjectRef(k.GVK, o)}
		in.resync.Add(k)
	}
	if len(e.outstanding) == 0 {
		in.opts.Notify(id)
	}
}

func (in *Intake) processResync(ctx context.Context) bool {
	k, shutdown := in.resync.Get()
	if shutdown {
		return false
	}
	defer in.resync.Done(k)
	in.mu.Lock()
	c, ok := in.resyncItems[k]
	in.mu.Unlock()
	if !ok {
		in.resync.Forget(k)
		return true
	}
	if !in.opts.Live.Synced(k.GVK) {
		// The watch is still listing, or refused (WatchForbidden): its
		// store would miss objects. Look again with a backoff capped at
		// syncWaitMax, not the queue's own, which grows to a quarter of
		// an hour: a grant is picked up within seconds of the watch.
		in.resync.AddAfter(k, in.syncWait.When(k))
		return true
	}
	in.syncWait.Forget(k)
	if err := in.opts.Handler.Handle(ctx, k, c, true); err != nil {
		if in.Deny(c.Owner, k, err) {
			in.resync.Forget(k)
			in.resyncDone(c.Owner, k)
			return true
		}
		if !errors.Is(err, drift.ErrStale) {
			in.opts.Log.Error(err, "resyncing live object", "object", k.String())
		}
		in.resync.AddRateLimited(k)
		return true
	}
	in.Allow(c.Owner, k)
	in.resync.Forget(k)
	in.resyncDone(c.Owner, k)
	return true
}

// resyncDone marks one object checked, and tells the reconciler when its
// Kustomization's resync is complete.
func (in *Intake) resyncDone(id types.NamespacedName, k Key) {
	in.mu.Lock()
	delete(in.resyncItems, k)
	e := in.entries[id]
	complete := false
	if e != nil && e.outstanding[k] {
		delete(e.outstanding, k)
		complete = len(e.outstanding) == 0
	}
	in.mu.Unlock()
	if complete {
		in.opts.Log.V(1).Info("every live object checked against the applied revision", "kustomization", id.String())
		in.opts.Notify(id)
	}
}
