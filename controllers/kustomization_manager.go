package controllers

import (
	"context"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/policy"
	"github.com/reflux-dev/reflux/reverse/record"
)

// KustomizationReconcilerOptions tune the controller.
type KustomizationReconcilerOptions struct {
	// MaxConcurrentReconciles is the number of parallel reconciles.
	MaxConcurrentReconciles int
	// Notifications are reconcile requests from the engine and the
	// renderer: a render finished, a write-back ended.
	Notifications <-chan event.TypedGenericEvent[client.Object]
}

// SetupWithManager registers the reconciler.
func (r *KustomizationReconciler) SetupWithManager(mgr ctrl.Manager, opts KustomizationReconcilerOptions) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&kustomizev1.Kustomization{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{},
			predicate.LabelChangedPredicate{}, statusChanged{}))).
		Watches(&refluxv1.ReverseSyncPolicy{}, handler.EnqueueRequestsFromMapFunc(r.kustomizationsInNamespace),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&refluxv1.Drift{}, recordHandler(r.engineOf)).
		// A new artifact means Flux is about to roll a revision out: live
		// changes must wait for its render rather than be compared with
		// the old one. Flux's other source kinds are seen through the
		// Kustomization's own status.
		Watches(&sourcev1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(r.kustomizationsOfGitRepository),
			builder.WithPredicates(artifactChanged{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles})
	if opts.Notifications != nil {
		b = b.WatchesRawSource(source.Channel(opts.Notifications, &handler.EnqueueRequestForObject{}))
	}
	if r.Watcher != nil {
		// A live watch refused or allowed again changes the Drifted
		// condition of the Kustomizations using its kind.
		b = b.WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			r.Watcher.OnAccessChange(func(ks types.NamespacedName) { q.Add(reconcile.Request{NamespacedName: ks}) })
			return nil
		}))
	}
	return b.Complete(r)
}

// statusChanged passes Kustomization updates that change what reflux
// renders or whether it may: the applied revision, the generation Flux
// observed, and readiness.
type statusChanged struct{ predicate.Funcs }

func (statusChanged) Update(e event.UpdateEvent) bool {
	oldKs, ok1 := e.ObjectOld.(*kustomizev1.Kustomization)
	newKs, ok2 := e.ObjectNew.(*kustomizev1.Kustomization)
	if !ok1 || !ok2 {
		return false
	}
	return oldKs.Status.LastAppliedRevision != newKs.Status.LastAppliedRevision ||
		oldKs.Status.ObservedGeneration != newKs.Status.ObservedGeneration ||
		readyStatus(oldKs) != readyStatus(newKs)
}

func readyStatus(ks *kustomizev1.Kustomization) string {
	if c := conditions.Get(ks, "Ready"); c != nil {
		return string(c.Status)
	}
	return ""
}

// artifactChanged passes source updates that change the artifact revision.
type artifactChanged struct{ predicate.Funcs }

func (artifactChanged) Update(e event.UpdateEvent) bool {
	oldSrc, ok1 := e.ObjectOld.(*sourcev1.GitRepository)
	newSrc, ok2 := e.ObjectNew.(*sourcev1.GitRepository)
	if !ok1 || !ok2 || newSrc.Status.Artifact == nil {
		return false
	}
	return oldSrc.Status.Artifact == nil || oldSrc.Status.Artifact.Revision != newSrc.Status.Artifact.Revision
}

func (r *KustomizationReconciler) kustomizationsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.optedIn(ctx, o.GetNamespace(), func(*kustomizev1.Kustomization) bool { return true })
}

func (r *KustomizationReconciler) kustomizationsOfGitRepository(ctx context.Context, o client.Object) []reconcile.Request {
	// A Kustomization may name a source in another namespace, so every
	// namespace's opted-in Kustomizations are looked at.
	return r.optedIn(ctx, "", func(ks *kustomizev1.Kustomization) bool {
		ref := ks.Spec.SourceRef
		ns := ref.Namespace
		if ns == "" {
			ns = ks.Namespace
		}
		return ref.Kind == sourcev1.GitRepositoryKind && ref.Name == o.GetName() && ns == o.GetNamespace()
	})
}

func (r *KustomizationReconciler) optedIn(ctx context.Context, namespace string, match func(*kustomizev1.Kustomization) bool) []reconcile.Request {
	list := &kustomizev1.KustomizationList{}
	if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Kustomizations", "namespace", namespace)
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if policy.OptedIn(&list.Items[i]) && match(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// reportDelay coalesces the Drift records' changes into one report: the
// Kustomization's condition and the hand-off to write-back are summaries,
// and recomputing them for every record write would put status patches
// on the live path's heels.
const reportDelay = time.Second

// burstReportDelay is reportDelay while the live path works through a
// burst (intake.Busy). A Kustomization's status patch costs the apiserver
// as much as ten records' status writes (its inventory lists every
// object): during a burst of 1,000 edits over 10 Kustomizations, the
// 119 patches a report a second made took about a tenth of the
// apiserver's processor time, which the records were waiting on.
const burstReportDelay = 5 * time.Second

// reportDelayFor is how long a record change waits for its report.
func reportDelayFor(busy bool) time.Duration {
	if busy {
		return burstReportDelay
	}
	return reportDelay
}

// recordHandler reports record changes to the reconciler, coalesced, and
// hands to the engine at once a record a user dismissed or deleted, and
// one reflux did not write (which the engine deletes).
// The engine is the one governing the record's Kustomization: a remote
// cluster's holds are released there.
func recordHandler(engineOf func(types.NamespacedName) *Engine) handler.TypedEventHandler[client.Object, reconcile.Request] {
	return coalesce(func(_ context.Context, o client.Object) ([]reconcile.Request, time.Duration) {
		d, ok := o.(*refluxv1.Drift)
		if !ok {
			return nil, 0
		}
		name, ns := d.Labels[record.KustomizationNameLabel], d.Labels[record.KustomizationNamespaceLabel]
		id := types.NamespacedName{Namespace: ns, Name: name}
		gov := engineOf(id).Governor
		if decide.DismissRequested(d) || !gov.IsSealed(d) {
			gov.OnRecord(d)
		}
		if name == "" || ns == "" {
			return nil, 0
		}
		return []reconcile.Request{{NamespacedName: id}}, reportDelayFor(gov.Busy())
	})
}

// every maps an object to the requests it enqueues, all after delay.
func every(mapFn func(context.Context, client.Object) []reconcile.Request, delay time.Duration) func(context.Context, client.Object) ([]reconcile.Request, time.Duration) {
	return func(ctx context.Context, o client.Object) ([]reconcile.Request, time.Duration) {
		return mapFn(ctx, o), delay
	}
}

// coalesce enqueues the mapped requests after the delay mapFn gives; the
// workqueue merges every request for the same key that arrives meanwhile
// into one, due at the earliest time asked.
func coalesce(mapFn func(context.Context, client.Object) ([]reconcile.Request, time.Duration)) handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		reqs, delay := mapFn(ctx, o)
		for _, req := range reqs {
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
