package release

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/ssa/normalize"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/reverse/drift"
)

// dryRun makes helm-controller's diff request for one object
// (jsondiff.Unstructured in fluxcd/pkg/ssa): a server-side apply of the
// desired object, dry run, as helm-controller, with forced ownership. It
// adds one thing: the live resourceVersion as a precondition, so the
// answer is about exactly the live object compared with (helm-controller
// reads live and applies a moment later, with no precondition).
func (d *Detector) dryRun(ctx context.Context, in Input) (*unstructured.Unstructured, error) {
	obj := in.Desired.DeepCopy()
	obj.SetResourceVersion(in.Live.GetResourceVersion())
	err := d.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.DryRunAll, client.ForceOwnership, client.FieldOwner(FieldOwner))
	switch {
	case err == nil:
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: %s at resourceVersion %s: %w", drift.ErrStale,
			describe(in.Live), in.Live.GetResourceVersion(), err)
	default:
		return nil, fmt.Errorf("dry-run apply of %s as %s: %w", describe(in.Desired), FieldOwner, err)
	}
	// Applying to a deleted object creates it in the dry run, whatever the
	// resourceVersion; a new UID gives that away.
	if obj.GetUID() != in.Live.GetUID() {
		return nil, fmt.Errorf("%w: %s (uid %s) no longer exists", drift.ErrStale, describe(in.Live), in.Live.GetUID())
	}
	if err := normalize.DryRunUnstructured(obj); err != nil {
		return nil, fmt.Errorf("normalizing dry-run result of %s: %w", describe(in.Desired), err)
	}
	return obj, nil
}
