package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// Holder applies and releases holds. Both are server-side applies under
// reflux's own field manager, so releasing removes exactly the annotations
// reflux added and nothing another manager (or Git) owns.
type Holder struct {
	Client client.Client
}

var _ governor.Holder = Holder{}

// Hold writes a hold's annotations (refluxv1.HoldAnnotations) on the live
// object so that Flux stops reverting it. The object's UID is a
// precondition: a hold never lands on a recreated object.
func (h Holder) Hold(ctx context.Context, obj refluxv1.ObjectRef, annotations map[string]string) (*unstructured.Unstructured, error) {
	u := applyConfig(obj)
	u.SetAnnotations(annotations)
	// The apply fills u with the object as the apiserver left it.
	if err := h.Client.Patch(ctx, u, client.Apply, client.FieldOwner(refluxv1.FieldManager), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("holding %s/%s %s: %w", obj.Kind, obj.Name, obj.Namespace, err)
	}
	return u, nil
}

// Release removes reflux's hold annotations, leaving the object to Flux,
// which then restores Git's values at its next reconcile. Releasing an
// object that is gone is not an error, and never recreates it.
func (h Holder) Release(ctx context.Context, obj refluxv1.ObjectRef) error {
	u := applyConfig(obj)
	err := h.Client.Patch(ctx, u, client.Apply, client.FieldOwner(refluxv1.FieldManager), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return nil
	}
	// A UID mismatch comes back as Invalid ("metadata.uid: field is
	// immutable"): the object was recreated and the hold went with the old.
	if err != nil && obj.UID != "" && h.replaced(ctx, obj) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("releasing %s/%s %s: %w", obj.Kind, obj.Name, obj.Namespace, err)
	}
	return nil
}

// replaced reports whether the object now has another UID or is gone, in
// which case the hold went with the old object.
func (h Holder) replaced(ctx context.Context, obj refluxv1.ObjectRef) bool {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind))
	err := h.Client.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: obj.Name}, cur)
	return apierrors.IsNotFound(err) || err == nil && string(cur.GetUID()) != obj.UID
}

// applyConfig is the smallest apply configuration naming obj. Without a
// UID, server-side apply would create a missing object; with one, the
// apiserver refuses to touch any other object than the one seen.
func applyConfig(obj refluxv1.ObjectRef) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind))
	u.SetNamespace(obj.Namespace)
	u.SetName(obj.Name)
	u.SetUID(types.UID(obj.UID))
	return u
}
