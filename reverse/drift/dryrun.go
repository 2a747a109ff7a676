package drift

import (
	"context"
	"errors"
	"fmt"

	ssaerrors "github.com/fluxcd/pkg/ssa/errors"
	"github.com/fluxcd/pkg/ssa/normalize"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errImmutable marks a dry run the apiserver refused for an immutable field.
var errImmutable = errors.New("immutable field")

// prepare returns the object Flux would send: Desired normalised as
// kustomize-controller normalises it before applying, with Flux's owner
// labels, pinned to the live resourceVersion.
func prepare(in Input) (*unstructured.Unstructured, error) {
	obj := in.Desired.DeepCopy()
	if err := normalizeDesired(obj); err != nil {
		return nil, fmt.Errorf("normalizing desired object: %w", err)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(in.Live.GetNamespace())
	}
	// kustomize-controller labels every object it applies with the
	// Kustomization's name and namespace (ssa.SetOwnerLabels). A rendered
	// object without them would make the dry run drop them.
	labels := obj.GetLabels()
	for _, k := range ownerLabels {
		if v, ok := in.Live.GetLabels()[k]; ok && labels[k] == "" {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[k] = v
		}
	}
	obj.SetLabels(labels)
	obj.SetManagedFields(nil)
	obj.SetUID("")
	// The resourceVersion is a precondition: the dry run merges Git into
	// exactly the live object we compare with, or fails with a conflict.
	obj.SetResourceVersion(in.Live.GetResourceVersion())
	return obj, nil
}

// normalizeDesired normalises a rendered object as kustomize-controller
// does before applying. It goes through normalize.UnstructuredList, not
// normalize.Unstructured, because the list form leaves Roles and
// ClusterRoles alone (fluxcd/kustomize-controller#1041).
func normalizeDesired(obj *unstructured.Unstructured) error {
	return normalize.UnstructuredList([]*unstructured.Unstructured{obj})
}

// dryRun makes the one request: the server-side dry-run apply of obj (from
// prepare, and overwritten with the result) that Flux makes, as its field
// owner, with forced ownership. The result is normalised as Flux normalises
// dry-run results.
func (d *Detector) dryRun(ctx context.Context, in Input, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	err := d.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.DryRunAll, client.ForceOwnership, client.FieldOwner(d.opts.fieldOwner))
	switch {
	case err == nil:
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: %s/%s at resourceVersion %s: %w", ErrStale,
			in.Live.GetNamespace(), in.Live.GetName(), in.Live.GetResourceVersion(), err)
	case ssaerrors.IsImmutableError(err):
		return nil, fmt.Errorf("%w: %w", errImmutable, err)
	default:
		return nil, fmt.Errorf("dry-run apply of %s/%s: %w", in.Live.GetNamespace(), in.Live.GetName(), err)
	}
	// Applying to a deleted object dry-run creates it, ignoring the
	// resourceVersion; a new UID gives that away.
	if obj.GetUID() != in.Live.GetUID() {
		return nil, fmt.Errorf("%w: %s/%s (uid %s) no longer exists", ErrStale,
			in.Live.GetNamespace(), in.Live.GetName(), in.Live.GetUID())
	}
	if err := normalize.DryRunUnstructured(obj); err != nil {
		return nil, fmt.Errorf("normalizing dry-run result: %w", err)
	}
	return obj, nil
}
