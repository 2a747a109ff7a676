package controllers

import (
	"context"
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/reverse/fleet"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/owed"
	"github.com/reflux-dev/reflux/reverse/policy"
)

// Engine is the drift engine of one cluster and the live watches that
// feed it.
type Engine struct {
	Governor *governor.Governor
	Watcher  *Watcher
}

// Forget ends the engine's governance of a Kustomization (fleet.Engine).
func (e *Engine) Forget(ctx context.Context, id types.NamespacedName) { e.Governor.Forget(ctx, id) }

// Owing is how many holds the engine still owes a release (fleet.Engine).
func (e *Engine) Owing() int { return e.Governor.Owing() }

// Owed lists the releases the engine owes (fleet.Engine).
func (e *Engine) Owed() []owed.Release { return e.Governor.Owed() }

// Owe takes over releases a predecessor owed (fleet.Engine).
func (e *Engine) Owe(rs ...owed.Release) { e.Governor.Owe(rs...) }

// RemoteEngines are the engines of the remote clusters governed
// Kustomizations target through spec.kubeConfig (reverse/fleet.Fleet).
type RemoteEngines interface {
	For(ctx context.Context, obj client.Object) (fleet.Assignment[*Engine], error)
	Of(id types.NamespacedName) (*Engine, bool)
	Forget(ctx context.Context, id types.NamespacedName)
}

// local is the hub's own engine.
func (r *KustomizationReconciler) local() *Engine {
	return &Engine{Governor: r.Governor, Watcher: r.Watcher}
}

// engineOf returns the engine that governs id now: its remote cluster's
// if it has been assigned one, else the hub's.
func (r *KustomizationReconciler) engineOf(id types.NamespacedName) *Engine {
	if r.Remote != nil {
		if e, ok := r.Remote.Of(id); ok {
			return e
		}
	}
	return r.local()
}

// forget ends the governance of id in whichever engine has it.
func (r *KustomizationReconciler) forget(ctx context.Context, id types.NamespacedName) {
	r.Governor.Forget(ctx, id)
	if r.Remote != nil {
		r.Remote.Forget(ctx, id)
	}
}

// target is the cluster a governed Kustomization's objects live in.
type target struct {
	// engine governs them; nil when the cluster cannot be connected to.
	engine *Engine
	// cluster names it as records do: "" for the hub.
	cluster string
	// down is why the cluster does not answer, nil while it does.
	down error
}

// targetOf returns the cluster obj's objects live in, letting go of obj
// in the engine that governed it before if it moved between the hub and a
// remote cluster. An error is a cluster reflux cannot govern: a
// kubeConfig it cannot follow, or remote clusters with no fleet.
func (r *KustomizationReconciler) targetOf(ctx context.Context, obj *kustomizev1.Kustomization) (target, error) {
	id := keyOf(obj)
	if err := policy.CheckCluster(obj); err != nil {
		return target{}, err
	}
	ref, remote, err := fleet.RefOf(obj)
	switch {
	case err != nil:
		return target{}, err
	case !remote:
		if r.Remote != nil {
			r.Remote.Forget(ctx, id)
		}
		return target{engine: r.local()}, nil
	case r.Remote == nil:
		return target{}, fmt.Errorf("Flux applies this Kustomization to a remote cluster (%s), and this reflux runs "+
			"without remote clusters: nothing of it is watched, held or recorded", ref)
	}
	// Only when the hub's engine governed it: forgetting also drops the
	// Kustomization's renders and metrics, which the engine of its
	// cluster shares.
	if _, governed := r.Governor.Status(id); governed {
		r.Governor.Forget(ctx, id)
	}
	a, err := r.Remote.For(ctx, obj)
	if err != nil {
		return target{cluster: ref.String(), down: err}, nil
	}
	out := target{engine: a.Engine, cluster: a.Ref.String()}
	if a.Unreachable != nil {
		out.down = a.Unreachable
	}
	return out, nil
}
