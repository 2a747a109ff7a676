package controllers

import (
	"context"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// unsupported lets go of a governed Kustomization reflux cannot govern
// (a remote one, issue 24) and says why in Drifted=Unknown with reason.
// Letting go is what the end of governance does (Governor.Forget): its
// watches stop, holds taken before evaluation are released so that Flux
// may apply, and a record keeps its own hold for review as it does after
// an opt-out. ReverseSynced goes with it: no write-back runs for the
// Kustomization any more. The Warning event and the log line come once,
// as Drifted comes to reason, not at every reconcile.
func (r *KustomizationReconciler) unsupported(ctx context.Context, obj *kustomizev1.Kustomization, reason string, err error) {
	r.forget(ctx, keyOf(obj))
	conditions.Delete(obj, refluxv1.ReverseSyncedCondition)
	if !r.reported(ctx, obj, reason) {
		ctrl.LoggerFrom(ctx).Info("Kustomization not governed", "reason", reason, "why", err.Error())
		if r.Events != nil {
			meta := map[string]string{}
			if rev := obj.Status.LastAppliedRevision; rev != "" {
				meta[kustomizev1.GroupVersion.Group+"/"+eventv1.MetaRevisionKey] = rev
			}
			r.Events.AnnotatedEventf(obj, meta, corev1.EventTypeWarning, reason, "%s", err)
		}
	}
	conditions.MarkUnknown(obj, refluxv1.DriftedCondition, reason, "%s", err)
}

// reported tells whether obj's Drifted condition already has reason. The
// cached copy may predate this reconciler's last status patch, so one
// that does not is read again from the apiserver before a second event
// goes out; on an error the event goes out rather than not at all.
func (r *KustomizationReconciler) reported(ctx context.Context, obj *kustomizev1.Kustomization, reason string) bool {
	if conditions.GetReason(obj, refluxv1.DriftedCondition) == reason {
		return true
	}
	if r.APIReader == nil {
		return false
	}
	fresh := &kustomizev1.Kustomization{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "reading the Kustomization's conditions; the event may repeat")
		return false
	}
	return conditions.GetReason(fresh, refluxv1.DriftedCondition) == reason
}
