package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// dismissRequested reports whether a user dismissed the record, by
// annotation or by deleting it.
func dismissRequested(d *refluxv1.Drift) bool {
	return d.Annotations[refluxv1.DismissAnnotation] == "true" || !d.DeletionTimestamp.IsZero()
}

// Dismiss releases the record's hold, marks it Dismissed and asks Flux to
// reconcile now, so Git's value is restored without waiting an interval.
// The record stays (a deleted one, through its finalizer) until the object
// no longer drifts, so the same drift is not recorded again meanwhile.
func (e *Engine) Dismiss(ctx context.Context, g *Governed, d *refluxv1.Drift) error {
	if err := e.resolve(ctx, d, refluxv1.DriftDismissed); err != nil {
		return err
	}
	if g == nil {
		return nil
	}
	ks := g.Kustomization
	patch := client.MergeFrom(ks.DeepCopy())
	requested := ks.DeepCopy()
	if requested.Annotations == nil {
		requested.Annotations = map[string]string{}
	}
	requested.Annotations[meta.ReconcileRequestAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	if err := e.Client.Patch(ctx, requested, patch, client.FieldOwner(refluxv1.FieldManager)); err != nil {
		return fmt.Errorf("requesting reconcile of Kustomization %s/%s: %w", ks.Namespace, ks.Name, err)
	}
	return nil
}

func (e *Engine) removeFinalizer(ctx context.Context, d *refluxv1.Drift) error {
	if !controllerutil.ContainsFinalizer(d, refluxv1.DriftFinalizer) {
		return nil
	}
	patch := client.MergeFrom(d.DeepCopy())
	d = d.DeepCopy()
	controllerutil.RemoveFinalizer(d, refluxv1.DriftFinalizer)
	if err := e.Client.Patch(ctx, d, patch); err != nil {
		return fmt.Errorf("removing finalizer of drift record %s: %w", d.Name, err)
	}
	return nil
}

// processDismissals acts on records dismissed while no live event arrives:
// it releases their holds, and lets deleted records go once the object is
// clean. It needs the live object, so it goes through Evaluate.
func (r *KustomizationReconciler) processDismissals(ctx context.Context, g *Governed, records []refluxv1.Drift) error {
	for i := range records {
		d := &records[i]
		if !dismissRequested(d) {
			continue
		}
		obj := d.Spec.Object
		gvk := schemaGVK(obj.APIVersion, obj.Kind)
		live, ok := r.Watcher.Get(gvk, obj.Namespace, obj.Name)
		if !ok {
			// The object is gone: nothing to hold or restore.
			if err := r.Engine.resolve(ctx, d, refluxv1.DriftDismissed); err != nil {
				return err
			}
			if !d.DeletionTimestamp.IsZero() {
				if err := r.Engine.removeFinalizer(ctx, d); err != nil {
					return err
				}
			}
			continue
		}
		if d.Status.State != refluxv1.DriftDismissed {
			if err := r.Engine.Dismiss(ctx, g, d); err != nil {
				return err
			}
			continue
		}
		if err := r.Engine.Evaluate(ctx, g, live, time.Time{}); err != nil {
			return err
		}
	}
	return nil
}
