package controllers

import (
	"context"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// ReverseSyncPolicyReconcilerOptions tune the controller.
type ReverseSyncPolicyReconcilerOptions struct {
	// MaxConcurrentReconciles is the number of parallel reconciles.
	MaxConcurrentReconciles int
}

// SetupWithManager registers the reconciler and its watches. Secrets are
// not watched: like Flux's controllers, reflux reads them uncached, and a
// policy waiting on its signing Secret is re-checked at RetryInterval.
func (r *ReverseSyncPolicyReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts ReverseSyncPolicyReconcilerOptions) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&refluxv1.ReverseSyncPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&kustomizev1.Kustomization{}, handler.EnqueueRequestsFromMapFunc(r.policiesInNamespace),
			builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{},
				// A spec that gains or drops spec.kubeConfig changes what is governed.
				predicate.GenerationChangedPredicate{}))).
		Watches(&refluxv1.Drift{}, coalesce(every(policyOfRecord, summaryDelay))).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}

// policiesInNamespace maps a Kustomization to every policy that might
// select it: a label change can move it in or out of any selector.
func (r *ReverseSyncPolicyReconciler) policiesInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	list := &refluxv1.ReverseSyncPolicyList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing ReverseSyncPolicies", "namespace", o.GetNamespace())
		return nil
	}
	return requestsFor(list)
}

func requestsFor(list *refluxv1.ReverseSyncPolicyList) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
	}
	return reqs
}

// policyOfRecord maps a Drift record to the policy that classified it, so
// the policy's drift report follows its records.
func policyOfRecord(_ context.Context, o client.Object) []reconcile.Request {
	d, ok := o.(*refluxv1.Drift)
	if !ok || d.Spec.Policy == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.Policy}}}
}

// summaryDelay coalesces record changes into one policy status update: the
// summary is a dashboard, not part of catching a change.
const summaryDelay = 2 * time.Second
