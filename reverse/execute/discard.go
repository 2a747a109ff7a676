package execute

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// discard deletes a record whose seal does not verify, without acting on
// anything it says: no hold is released for it and nothing is written to
// Git. Its finalizer, if it copied reflux's, is dropped first, since
// reflux's finalizer would otherwise release the hold of whatever object
// the record names. The object is then evaluated as if it had no record,
// so a real drift gets a real record.
//
// Records written before reflux sealed them are discarded the same way;
// the live state they described is recorded afresh (with a new first
// seen) as soon as the engine looks at the object.
func (x *Executor) discard(ctx context.Context, p *Plan, rec *refluxv1.Drift, why error) error {
	x.opts.Log.Error(why, "deleting a drift record reflux did not write; nothing it says is acted on",
		"record", rec.Namespace+"/"+rec.Name, "object", rec.Spec.Object.Kind+"/"+rec.Spec.Object.Namespace+"/"+rec.Spec.Object.Name)
	if p.Kustomization != nil && x.opts.Events != nil {
		x.opts.Events.AnnotatedEventf(p.Kustomization, map[string]string{MetaKey("reflux-record"): rec.Name}, "Warning",
			refluxv1.RecordNotSealedEventReason, "Drift record %s/%s was not written by reflux (%v): deleted, and not acted on",
			rec.Namespace, rec.Name, why)
	}
	if controllerutil.ContainsFinalizer(rec, refluxv1.DriftFinalizer) {
		base := rec.DeepCopy()
		controllerutil.RemoveFinalizer(rec, refluxv1.DriftFinalizer)
		if err := x.opts.Client.Patch(ctx, rec, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing reflux's finalizer from unsealed drift record %s: %w", rec.Name, err)
		}
	}
	uid := rec.UID
	if err := x.opts.Client.Delete(ctx, rec, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting unsealed drift record %s: %w", rec.Name, err)
	}
	return nil
}
