package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"

	"github.com/reflux-dev/reflux/reverse/helmlive"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/release"
	"github.com/reflux-dev/reflux/reverse/report"
)

// HelmGovernance is what the HelmRelease reconciler asks the engine.
type HelmGovernance interface {
	// Governs reports whether the engine governs a Kustomization.
	Governs(id types.NamespacedName) bool
	// Kinds are the kinds of the objects of a HelmRelease's latest release.
	Kinds(ctx context.Context, hr *helmv2.HelmRelease) ([]schema.GroupVersionKind, error)
	// Released tells the engine of a HelmRelease read, nil once it is
	// gone: a new release has its objects compared again.
	Released(id types.NamespacedName, hr *helmv2.HelmRelease)
	// HelmHealth is what keeps a HelmRelease's objects from being
	// evaluated or traced; OnHelmHealth hears of its changes.
	HelmHealth(id types.NamespacedName) helmlive.Health
	OnHelmHealth(fn func(types.NamespacedName))
	// Sealed keeps the records reflux itself wrote; IsSealed says
	// whether reflux wrote one.
	Sealed(all []refluxv1.Drift) []refluxv1.Drift
	IsSealed(d *refluxv1.Drift) bool
	// OnRecord hands the engine a record a user changed.
	OnRecord(d *refluxv1.Drift)
	// ScheduleExpiry arms the expiry of the records whose hold the
	// engine has.
	ScheduleExpiry(records []refluxv1.Drift)
}

// HelmReleaseReconciler keeps the live watches of the objects of every
// HelmRelease a governed Kustomization applies (issue 19 §2): the kinds of
// its latest release, selected by helm-controller's labels. The engine's
// Helm path (reverse/helmlive) handles their changes. It writes the
// HelmRelease's ReverseDrifted and ReverseSynced conditions, beside
// helm-controller's own.
type HelmReleaseReconciler struct {
	Client     client.Client
	Governance HelmGovernance
	// Watcher is the Helm-labelled one (WatcherOptions.Selector).
	Watcher *Watcher
	// Remote are the engines of the remote clusters HelmReleases install
	// in through spec.kubeConfig; nil governs none of them.
	Remote HelmRemoteEngines
	// Requeue, when set, registers a function to hear of HelmReleases to
	// report again: their remote cluster stopped or started answering,
	// or a watch of their objects was refused or allowed there.
	Requeue func(fn func(types.NamespacedName))
	// RetryInterval is how soon a release that cannot be read is tried
	// again.
	RetryInterval time.Duration
}

// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases/status,verbs=get;patch

// Reconcile makes the watches of one HelmRelease's objects match its
// governance and its latest release, and reports them.
func (r *HelmReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	hr := &helmv2.HelmRelease{}
	if err := r.Client.Get(ctx, req.NamespacedName, hr); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	patcher := newConditionsPatcher(r.Client, hr, helmReleaseOwnedConditions...)
	owner := intake.OwnerOf(hr)
	if owner.Name == "" || !hr.DeletionTimestamp.IsZero() || !helmlive.Governs(hr) || !r.Governance.Governs(owner) {
		if err := r.ungovern(ctx, hr, owner); err != nil {
			return ctrl.Result{}, err
		}
		if hr.DeletionTimestamp.IsZero() {
			// What reflux said of it no longer holds.
			for _, t := range helmReleaseOwnedConditions {
				conditions.Delete(hr, t)
			}
			return ctrl.Result{}, patcher.Patch(ctx, hr)
		}
		return ctrl.Result{}, nil
	}
	tgt := r.targetOf(ctx, hr)
	var result ctrl.Result
	var err error
	switch {
	case tgt.ungoverned != nil:
		// Its objects live in another cluster reflux cannot govern:
		// watching kinds here would watch someone else's objects.
		// ReverseDrifted says so.
	case tgt.unreachable != nil && tgt.governance == nil:
		// Not connected: tried again, and the fleet's probe brings it
		// back when the cluster answers.
		result = ctrl.Result{RequeueAfter: r.RetryInterval}
	default:
		tgt.governance.Released(req.NamespacedName, hr)
		result, err = r.watch(ctx, tgt, hr)
	}
	if rerr := r.report(ctx, hr, owner, tgt); rerr != nil {
		return ctrl.Result{}, errors.Join(err, rerr)
	}
	if rerr := patcher.Patch(ctx, hr); rerr != nil {
		return ctrl.Result{}, errors.Join(err, rerr)
	}
	return result, err
}

// helmReleaseOwnedConditions are the conditions reflux owns on a
// HelmRelease; helm-controller owns the rest, Drifted among them.
var helmReleaseOwnedConditions = []string{refluxv1.ReverseDriftedCondition, refluxv1.ReverseSyncedCondition}

// watch has the Helm-labelled watches cover the kinds of hr's latest
// release.
func (r *HelmReleaseReconciler) watch(ctx context.Context, tgt helmTarget, hr *helmv2.HelmRelease) (ctrl.Result, error) {
	kinds, err := tgt.governance.Kinds(ctx, hr)
	if errors.Is(err, release.ErrNoHistory) {
		return ctrl.Result{}, nil // helm-controller's status write brings it back
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "reading the HelmRelease's latest release: its objects are not watched yet")
		return ctrl.Result{RequeueAfter: r.RetryInterval}, nil
	}
	if err := tgt.watcher.Ensure(client.ObjectKeyFromObject(hr), kinds); err != nil && tgt.unreachable == nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// report sets hr's ReverseDrifted and ReverseSynced conditions from the
// open records of its objects, which the Kustomization that applies it
// owns, and what keeps them from being evaluated or traced.
func (r *HelmReleaseReconciler) report(ctx context.Context, hr *helmv2.HelmRelease, owner types.NamespacedName, tgt helmTarget) error {
	mine, err := r.records(ctx, hr, owner)
	if err != nil {
		return err
	}
	var h helmlive.Health
	if tgt.governance != nil {
		h = tgt.governance.HelmHealth(client.ObjectKeyFromObject(hr))
		if tgt.remote {
			// The hub's engine arms the timers of the Kustomization's
			// other records; these holds are in the remote cluster.
			tgt.governance.ScheduleExpiry(mine)
		}
	}
	if h.Release == "" {
		if ref, err := release.Latest(hr); err == nil {
			h.Release = ref.String()
		}
	}
	open := record.Open(mine)
	in := report.HelmDriftedInput{Release: h.Release, ReleaseErr: h.ReleaseErr, ChartErr: h.ChartErr,
		ArtifactErr: h.Stopped.Artifact, ValuesErr: h.Stopped.Values, Denied: h.Denied, Open: open,
		Ungoverned: tgt.ungoverned, Unreachable: tgt.unreachable}
	if c := report.HelmDrifted(in); c != nil {
		c.ObservedGeneration = hr.Generation
		conditions.Set(hr, c)
	}
	if c := report.HelmSynced(open); c != nil {
		c.ObservedGeneration = hr.Generation
		conditions.Set(hr, c)
	} else {
		conditions.Delete(hr, refluxv1.ReverseSyncedCondition)
	}
	return nil
}

// records lists the records reflux wrote of hr's objects, which the
// Kustomization owner that applies it owns.
func (r *HelmReleaseReconciler) records(ctx context.Context, hr *helmv2.HelmRelease, owner types.NamespacedName) ([]refluxv1.Drift, error) {
	list := &refluxv1.DriftList{}
	if err := r.Client.List(ctx, list, client.InNamespace(owner.Namespace), client.MatchingLabels{
		record.KustomizationNameLabel: owner.Name, record.KustomizationNamespaceLabel: owner.Namespace,
	}); err != nil {
		return nil, fmt.Errorf("listing drift records: %w", err)
	}
	var mine []refluxv1.Drift
	for _, d := range r.Governance.Sealed(list.Items) {
		if ref := d.Spec.HelmRelease; ref != nil && ref.Namespace == hr.Namespace && ref.Name == hr.Name {
			mine = append(mine, d)
		}
	}
	return mine, nil
}

// HelmReleaseReconcilerOptions tune the controller.
type HelmReleaseReconcilerOptions struct {
	MaxConcurrentReconciles int
}

// SetupWithManager registers the reconciler. A Kustomization's change
// (governed or not any more, a new inventory) brings the HelmReleases it
// applies.
func (r *HelmReleaseReconciler) SetupWithManager(mgr ctrl.Manager, opts HelmReleaseReconcilerOptions) error {
	if r.RetryInterval <= 0 {
		r.RetryInterval = 30 * time.Second
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("helmrelease").
		For(&helmv2.HelmRelease{}).
		Watches(&kustomizev1.Kustomization{}, handler.EnqueueRequestsFromMapFunc(helmReleasesOf)).
		Watches(&refluxv1.Drift{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if d, ok := o.(*refluxv1.Drift); ok {
				r.onRemoteRecord(d)
			}
			return helmReleaseOfRecord(o)
		})).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			add := func(id types.NamespacedName) { q.Add(reconcile.Request{NamespacedName: id}) }
			r.Governance.OnHelmHealth(add)
			if r.Requeue != nil {
				r.Requeue(add)
			}
			return nil
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}

// helmReleaseOfRecord is the HelmRelease whose object a record is of.
func helmReleaseOfRecord(o client.Object) []reconcile.Request {
	d, ok := o.(*refluxv1.Drift)
	if !ok || d.Spec.HelmRelease == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: d.Spec.HelmRelease.Namespace, Name: d.Spec.HelmRelease.Name}}}
}

// helmReleasesOf lists the HelmReleases in a Kustomization's inventory.
func helmReleasesOf(_ context.Context, o client.Object) []reconcile.Request {
	ks, ok := o.(*kustomizev1.Kustomization)
	if !ok || ks.Status.Inventory == nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, e := range ks.Status.Inventory.Entries {
		id, err := object.ParseObjMetadata(e.ID)
		if err != nil || id.GroupKind != (schema.GroupKind{Group: helmv2.GroupVersion.Group, Kind: helmv2.HelmReleaseKind}) {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: id.Namespace, Name: id.Name}})
	}
	return reqs
}
