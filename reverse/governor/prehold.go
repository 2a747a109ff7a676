package governor

import (
	"context"

	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/intake"
)

var _ intake.Preholder = &Governor{}

// Prehold is the hold lane's step (reverse/intake/holdlane.go): it holds
// the object of a change still waiting in the live queue, as the
// Kustomization's identity and under the name its record will have, when
// the policy lets reflux hold at all. The live lane decides the change
// later, as it decides one held while its render was not current: it
// keeps the hold for drift it holds, and releases it otherwise.
func (gv *Governor) Prehold(ctx context.Context, k intake.Key, c intake.Change) (bool, error) {
	if c.Deleted != nil {
		return gv.predelete(ctx, k, c)
	}
	live, ok := gv.opts.Live.Get(k.GVK, k.Namespace, k.Name)
	if !ok || drift.Unreverted(live) || live.GetDeletionTimestamp() != nil {
		// Held already (by reflux or a person), or Flux leaves its
		// writers alone: nothing to keep from Flux.
		return false, nil
	}
	snap, governed := gv.intake.Snapshot(intake.OwnerOf(live))
	if !governed || !snap.Gov.MayHold() || snap.Gov.Kustomization.DeletionTimestamp != nil {
		return false, nil
	}
	p := planFor(snap.Gov, c, intake.ObjectRef(k.GVK, live))
	held, err := gv.exec.Prehold(ctx, &p, gv.now())
	if held == nil {
		return false, err
	}
	gv.opts.Log.Info("held ahead of its evaluation: the live queue is behind", "record", p.Name, "object", k.String())
	return true, nil
}

// predelete is the hold lane's step for a deletion still waiting in the
// live queue: it writes the deletion down as a Pending record, durable
// where the queue is not. Flux's own deletions are left alone: a prune of
// what the current render no longer declares, or one the audit log says
// Flux made. One the audit log has not named yet is written with no
// deleter; the live lane's decision names it, or closes the record if it
// was Flux's after all (notDeleted).
func (gv *Governor) predelete(ctx context.Context, k intake.Key, c intake.Change) (bool, error) {
	snap, governed := gv.intake.Snapshot(c.Owner)
	if !governed || !snap.Gov.Kustomization.DeletionTimestamp.IsZero() {
		return false, nil
	}
	if snap.Current && snap.Render != nil {
		if _, declared := snap.Render.Object(desired.KeyOf(c.Deleted)); !declared {
			return false, nil // pruned
		}
	}
	if deleter, _ := gv.deleter(c.Deleted, c); !deleter.Flux {
		if err := gv.writePendingDeletion(ctx, k, c, snap, deleter); err != nil {
			return false, err
		}
		gv.opts.Log.Info("deletion written down ahead of its evaluation: the live queue is behind", "object", k.String())
		return true, nil
	}
	return false, nil
}
