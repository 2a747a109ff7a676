package governor

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/owed"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Forget stops governing a Kustomization, in every stage at once: its
// state, queued write-back, metrics, live watches and renders are dropped,
// and holds taken for changes that were never evaluated are released (no
// record decides to keep them). It is the one way to stop governing.
func (gv *Governor) Forget(ctx context.Context, id types.NamespacedName) {
	left, governed := gv.intake.Forget(id)
	gv.forgetReplay(id)
	if gv.sched != nil {
		gv.sched.Forget(id)
	}
	gv.opts.Metrics.Forget(id)
	gv.opts.Live.Forget(id)
	if gv.opts.Renders != nil {
		gv.opts.Renders.Forget(id)
	}
	if !governed {
		return
	}
	// The holds were taken as the Kustomization's identity, so they are
	// released as it too, never as reflux, on a worker of their own that
	// retries until each is released or a record owns it (issue 22 §3:
	// an identity whose client could not be built, or a refused release,
	// left the hold in place for good).
	for k, c := range left.Parked {
		if !c.Held {
			continue
		}
		obj := refluxv1.ObjectRef{APIVersion: k.GVK.GroupVersion().String(), Kind: k.GVK.Kind, Namespace: k.Namespace, Name: k.Name}
		gv.owed.Add(owed.Release{As: left.Gov.Identity, Object: obj,
			Record: types.NamespacedName{Namespace: id.Namespace, Name: record.Name(left.Gov.Ref(), obj)}})
	}
}

// Owing is how many holds Forget handed to the owed releases and are not
// released yet: an engine stopped before they are leaves them in place
// (reverse/fleet waits for zero before it disconnects a cluster).
func (gv *Governor) Owing() int { return gv.owed.Owing() }

// Owed lists the releases Forget owes and are not done yet, for an
// engine that takes this one's place (Owe).
func (gv *Governor) Owed() []owed.Release { return gv.owed.Owed() }

// Owe takes over releases another engine of the same cluster owed: a
// reconnected cluster's old engine stops, and the holds it owed a release
// must not stay in place for good. Releasing one twice does no harm.
func (gv *Governor) Owe(rs ...owed.Release) {
	for _, r := range rs {
		gv.owed.Add(r)
	}
}
