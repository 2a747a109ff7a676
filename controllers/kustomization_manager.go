package controllers

import (
	"context"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/record"
)

// KustomizationReconcilerOptions tune the controller.
type KustomizationReconcilerOptions struct {
	// MaxConcurrentReconciles is the number of parallel reconciles; it is
	// also the number of live-event workers.
	MaxConcurrentReconciles int
}

// SetupWithManager registers the reconciler and runs the live engine as
// part of the manager, under its leader election.
func (r *KustomizationReconciler) SetupWithManager(mgr ctrl.Manager, opts KustomizationReconcilerOptions) error {
	r.resyncs = map[string]resyncState{}
	r.fingerprint = map[string]string{}
	workers := opts.MaxConcurrentReconciles
	if workers < 1 {
		workers = 1
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.Engine.Start(ctx, workers)
		r.Watcher.Stop()
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&kustomizev1.Kustomization{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{},
			predicate.LabelChangedPredicate{}, statusChanged{}))).
		Watches(&refluxv1.ReverseSyncPolicy{}, handler.EnqueueRequestsFromMapFunc(r.kustomizationsInNamespace),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&refluxv1.Drift{}, coalesce(kustomizationOfRecord, reportDelay)).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}

// statusChanged passes Kustomization updates that change what reflux
// renders or whether it may: the applied revision and readiness.
type statusChanged struct{ predicate.Funcs }

func (statusChanged) Update(e event.UpdateEvent) bool {
	oldKs, ok1 := e.ObjectOld.(*kustomizev1.Kustomization)
	newKs, ok2 := e.ObjectNew.(*kustomizev1.Kustomization)
	if !ok1 || !ok2 {
		return false
	}
	return oldKs.Status.LastAppliedRevision != newKs.Status.LastAppliedRevision ||
		readyStatus(oldKs) != readyStatus(newKs)
}

func (r *KustomizationReconciler) kustomizationsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	list := &kustomizev1.KustomizationList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Kustomizations", "namespace", o.GetNamespace())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if OptedIn(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

func kustomizationOfRecord(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	name, ns := l[record.KustomizationNameLabel], l[record.KustomizationNamespaceLabel]
	if name == "" || ns == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// reportDelay coalesces the Drift records' changes into one report: the
// Kustomization's condition and the hand-off to write-back are summaries,
// and recomputing them for every record write would put status patches
// on the live path's heels.
const reportDelay = time.Second

// coalesce enqueues the mapped requests after delay; the workqueue merges
// every request for the same key that arrives meanwhile into one.
func coalesce(mapFn func(context.Context, client.Object) []reconcile.Request, delay time.Duration) handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range mapFn(ctx, o) {
			q.AddAfter(req, delay)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}
