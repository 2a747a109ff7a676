package governor

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/reverse/desired"
)

// syncWaitMax caps how long a resync item waits between looks at a watch
// that has not synced.
const syncWaitMax = 30 * time.Second

// renderKey names what a resync checks against: the render and the policy.
func renderKey(g *Governed, r *desired.Render) string {
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
func (gv *Governor) resyncLocked(e *entry) {
	key := renderKey(e.gov, e.render)
	interval := e.gov.Kustomization.Spec.Interval.Duration
	now := gv.now()
	if e.resyncFor == key && (len(e.outstanding) > 0 || interval <= 0 || now.Sub(e.resyncAt) < interval) {
		return
	}
	id := e.gov.Key()
	e.resyncFor, e.resyncAt = key, now
	e.outstanding = make(map[objKey]bool, len(e.render.Objects))
	for _, o := range e.render.Objects {
		k := objKey{GVK: o.GroupVersionKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
		e.outstanding[k] = true
		gv.resyncItems[k] = change{owner: id, obj: objectRef(k.GVK, o)}
		gv.resync.Add(k)
	}
	if len(e.outstanding) == 0 {
		gv.opts.Notify(id)
	}
}

func (gv *Governor) processResync(ctx context.Context) bool {
	k, shutdown := gv.resync.Get()
	if shutdown {
		return false
	}
	defer gv.resync.Done(k)
	gv.mu.Lock()
	c, ok := gv.resyncItems[k]
	gv.mu.Unlock()
	if !ok {
		gv.resync.Forget(k)
		return true
	}
	if !gv.opts.Live.Synced(k.GVK) {
		// The watch is still listing, or refused (WatchForbidden): its
		// store would miss objects. Look again with a backoff capped at
		// syncWaitMax, not the queue's own, which grows to a quarter of
		// an hour: a grant is picked up within seconds of the watch.
		gv.resync.AddAfter(k, gv.syncWait.When(k))
		return true
	}
	gv.syncWait.Forget(k)
	if err := gv.handle(ctx, k, c, true); err != nil {
		if gv.deny(c.owner, k, err) {
			gv.resync.Forget(k)
			gv.resyncDone(c.owner, k)
			return true
		}
		gv.opts.Log.Error(err, "resyncing live object", "object", k.String())
		gv.resync.AddRateLimited(k)
		return true
	}
	gv.allow(c.owner, k)
	gv.resync.Forget(k)
	gv.resyncDone(c.owner, k)
	return true
}

// resyncDone marks one object checked, and tells the reconciler when its
// Kustomization's resync is complete.
func (gv *Governor) resyncDone(id types.NamespacedName, k objKey) {
	gv.mu.Lock()
	delete(gv.resyncItems, k)
	e := gv.entries[id]
	complete := false
	if e != nil && e.outstanding[k] {
		delete(e.outstanding, k)
		complete = len(e.outstanding) == 0
	}
	gv.mu.Unlock()
	if complete {
		gv.opts.Log.V(1).Info("every live object checked against the applied revision", "kustomization", id.String())
		gv.opts.Notify(id)
	}
}
