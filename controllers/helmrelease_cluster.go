package controllers

import (
	"context"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/fleet"
	"github.com/reflux-dev/reflux/reverse/helmlive"
	"github.com/reflux-dev/reflux/reverse/record"
)

// HelmEngine is the engine of a remote cluster HelmReleases install in
// through spec.kubeConfig, with its Helm-labelled watches there as the
// Engine's Watcher. The Kustomizations that apply those HelmReleases stay
// the hub engine's. It is a fleet.Engine as Engine is, but for Forget.
type HelmEngine struct {
	Engine
	// Verifier renders values changes with the cluster's Helm storage.
	Verifier helmlive.Verifier
}

// Forget ends the engine's watches of a HelmRelease's objects
// (fleet.Engine), where Engine's would end a Kustomization's governance.
// Its records' holds stay, as in the hub: they are let go of when a
// record is dismissed or closed.
func (e *HelmEngine) Forget(_ context.Context, id types.NamespacedName) {
	e.Watcher.Forget(id)
	e.Governor.Released(id, nil)
}

// HelmRemoteEngines are the engines of the remote clusters governed
// HelmReleases install in (reverse/fleet.Fleet, one of its own: a
// Kustomization and a HelmRelease may share a name).
type HelmRemoteEngines interface {
	For(ctx context.Context, obj client.Object) (fleet.Assignment[*HelmEngine], error)
	Of(id types.NamespacedName) (*HelmEngine, bool)
	Forget(ctx context.Context, id types.NamespacedName)
}

// helmTarget is the cluster a HelmRelease's release is installed in.
type helmTarget struct {
	governance HelmGovernance
	watcher    *Watcher
	// remote is true for a remote cluster's engine.
	remote bool
	// ungoverned is why the release's cluster cannot be governed at all;
	// unreachable why it does not answer. Either leaves governance nil.
	ungoverned, unreachable error
}

// targetOf returns the engine of the cluster hr's release is installed
// in, letting go of hr in any other.
func (r *HelmReleaseReconciler) targetOf(ctx context.Context, hr *helmv2.HelmRelease) helmTarget {
	id := client.ObjectKeyFromObject(hr)
	ref, remote, err := fleet.RefOf(hr)
	if !remote {
		if r.Remote != nil {
			r.Remote.Forget(ctx, id)
		}
		return helmTarget{governance: r.Governance, watcher: r.Watcher}
	}
	r.Watcher.Forget(id)
	r.Governance.Released(id, nil)
	switch {
	case err != nil:
	case r.Remote == nil:
		err = fmt.Errorf("the release is installed in the cluster of spec.kubeConfig (%s), and this reflux runs "+
			"without remote clusters", ref)
	}
	if err != nil {
		if r.Remote != nil {
			r.Remote.Forget(ctx, id)
		}
		return helmTarget{ungoverned: err}
	}
	a, err := r.Remote.For(ctx, hr)
	if err != nil {
		return helmTarget{remote: true, unreachable: err}
	}
	out := helmTarget{governance: a.Engine.Governor, watcher: a.Engine.Watcher, remote: true}
	if a.Unreachable != nil {
		out.unreachable = a.Unreachable
	}
	return out
}

// forget lets go of the HelmRelease id in every engine.
func (r *HelmReleaseReconciler) forget(ctx context.Context, id types.NamespacedName) {
	r.Watcher.Forget(id)
	r.Governance.Released(id, nil)
	if r.Remote != nil {
		r.Remote.Forget(ctx, id)
	}
}

// ungovern lets go of a HelmRelease that is no longer governed: its
// objects are no longer watched. A remote cluster's engine is kept while
// any record of them is open: in the hub, the engine that holds them
// stays to release each hold when its record is dismissed, and a remote
// cluster's must too.
func (r *HelmReleaseReconciler) ungovern(ctx context.Context, hr *helmv2.HelmRelease, owner types.NamespacedName) error {
	id := client.ObjectKeyFromObject(hr)
	r.Watcher.Forget(id)
	r.Governance.Released(id, nil)
	if r.Remote == nil {
		return nil
	}
	keep := false
	if _, remote, err := fleet.RefOf(hr); err == nil && remote && owner.Name != "" {
		all, err := r.records(ctx, hr, owner)
		if err != nil {
			return err
		}
		keep = len(record.Open(all)) > 0
	}
	if !keep {
		r.Remote.Forget(ctx, id)
		return nil
	}
	a, err := r.Remote.For(ctx, hr)
	if err != nil {
		log.FromContext(ctx).Error(err, "connecting to the remote cluster to release the holds of the HelmRelease's open records")
		return nil
	}
	a.Engine.Forget(ctx, id)
	return nil
}

// onRemoteRecord hands a record of a remote cluster's release that a
// user dismissed, or that reflux did not write, to that cluster's engine:
// the hold to release, or the record to delete, is its. The hub's engine
// leaves such records alone (helmlive.Options.Cluster). An engine not
// connected yet looks at the record when its watches first list the
// release's objects.
func (r *HelmReleaseReconciler) onRemoteRecord(d *refluxv1.Drift) {
	ref := d.Spec.HelmRelease
	if r.Remote == nil || ref == nil || ref.Cluster == "" || !(decide.DismissRequested(d) || !r.Governance.IsSealed(d)) {
		return
	}
	if eng, ok := r.Remote.Of(types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}); ok {
		eng.Governor.OnRecord(d)
	}
}
