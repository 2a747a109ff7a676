package controllers

import (
	"context"
	"errors"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reflux-dev/reflux/reverse/helmlive"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/release"
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
}

// HelmReleaseReconciler keeps the live watches of the objects of every
// HelmRelease a governed Kustomization applies (issue 19 §2): the kinds of
// its latest release, selected by helm-controller's labels. The engine's
// Helm path (reverse/helmlive) handles their changes.
type HelmReleaseReconciler struct {
	Client     client.Client
	Governance HelmGovernance
	// Watcher is the Helm-labelled one (WatcherOptions.Selector).
	Watcher *Watcher
	// RetryInterval is how soon a release that cannot be read is tried
	// again.
	RetryInterval time.Duration
}

// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;patch

// Reconcile makes the watches of one HelmRelease's objects match its
// governance and its latest release.
func (r *HelmReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	hr := &helmv2.HelmRelease{}
	if err := r.Client.Get(ctx, req.NamespacedName, hr); err != nil {
		if apierrors.IsNotFound(err) {
			r.Watcher.Forget(req.NamespacedName)
			r.Governance.Released(req.NamespacedName, nil)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	owner := intake.OwnerOf(hr)
	if owner.Name == "" || !hr.DeletionTimestamp.IsZero() || !helmlive.Governs(hr) || !r.Governance.Governs(owner) {
		r.Watcher.Forget(req.NamespacedName)
		r.Governance.Released(req.NamespacedName, nil)
		return ctrl.Result{}, nil
	}
	r.Governance.Released(req.NamespacedName, hr)
	kinds, err := r.Governance.Kinds(ctx, hr)
	if errors.Is(err, release.ErrNoHistory) {
		return ctrl.Result{}, nil // helm-controller's status write brings it back
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "reading the HelmRelease's latest release: its objects are not watched yet")
		return ctrl.Result{RequeueAfter: r.RetryInterval}, nil
	}
	return ctrl.Result{}, r.Watcher.Ensure(req.NamespacedName, kinds)
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
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
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
