package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// HotfixMarker adds the manual-hotfix annotation to a live object whose
// hotfix the audit log declared.
//
// It writes a JSON merge patch under reflux's field manager, not a
// server-side apply: a hold is reflux's apply, and each apply (the next
// hold, or the release) would remove an annotation it does not list. An
// update under the same manager is owned apart from the apply, so releasing
// the hold leaves the mark; Flux keeps it too, since its apply only takes
// over fields of kubectl managers. The patch names the object's UID, so a
// recreated object is never marked.
type HotfixMarker struct {
	Client client.Client
}

var _ governor.Marker = HotfixMarker{}

// Mark implements governor.Marker.
func (m HotfixMarker) Mark(ctx context.Context, obj refluxv1.ObjectRef, annotations map[string]string) error {
	a := make(map[string]any, len(annotations))
	for k, v := range annotations {
		a[k] = v
	}
	if err := m.patch(ctx, obj, a); err != nil {
		return fmt.Errorf("annotating %s %s/%s as a manual hotfix: %w", obj.Kind, obj.Namespace, obj.Name, err)
	}
	return nil
}

// Unmark implements governor.Marker. An object that is gone, or was
// recreated, has nothing to unmark.
func (m HotfixMarker) Unmark(ctx context.Context, obj refluxv1.ObjectRef, keys []string) error {
	a := make(map[string]any, len(keys))
	for _, k := range keys {
		a[k] = nil // a merge patch's null removes the key
	}
	err := m.patch(ctx, obj, a)
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing the manual-hotfix annotation from %s %s/%s: %w", obj.Kind, obj.Namespace, obj.Name, err)
	}
	return nil
}

func (m HotfixMarker) patch(ctx context.Context, obj refluxv1.ObjectRef, annotations map[string]any) error {
	meta := map[string]any{"annotations": annotations}
	if obj.UID != "" {
		meta["uid"] = obj.UID
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return fmt.Errorf("encoding the patch: %w", err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind))
	u.SetNamespace(obj.Namespace)
	u.SetName(obj.Name)
	return m.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(refluxv1.FieldManager))
}
