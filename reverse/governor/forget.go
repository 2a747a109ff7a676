package governor

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Forget stops governing a Kustomization, in every stage at once: its
// state, queued write-back, metrics, live watches and renders are dropped,
// and holds taken for changes that were never evaluated are released (no
// record decides to keep them). It is the one way to stop governing.
func (gv *Governor) Forget(ctx context.Context, id types.NamespacedName) {
	left, governed := gv.intake.Forget(id)
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
	// released as it too, never as reflux. Whatever cannot be released is
	// named, with what an operator runs to do it: a stuck hold keeps Flux
	// off the object.
	holder, holderErr := gv.exec.HolderFor(left.Gov.Identity)
	for k, c := range left.Parked {
		if !c.Held {
			continue
		}
		obj := refluxv1.ObjectRef{APIVersion: k.GVK.GroupVersion().String(), Kind: k.GVK.Kind, Namespace: k.Namespace, Name: k.Name}
		if holderErr != nil {
			gv.opts.Log.Error(holderErr, "a hold taken before evaluation is left in place: release it by hand",
				"object", k.String(), "release", releaseCommand(obj))
			continue
		}
		name := record.Name(left.Gov.Ref(), obj)
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
