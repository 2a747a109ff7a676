package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/patch"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/policy"
	"github.com/reflux-dev/reflux/reverse/report"
	"github.com/reflux-dev/reflux/reverse/source"
)

// policyOwnedConditions are the conditions this reconciler owns on a
// ReverseSyncPolicy; the patch helper never overwrites others.
var policyOwnedConditions = []string{meta.ReadyCondition, meta.StalledCondition}

// ReverseSyncPolicyReconciler validates ReverseSyncPolicies beyond what
// admission can, and reports which Kustomizations each one governs.
type ReverseSyncPolicyReconciler struct {
	client.Client
	runtimectrl.Metrics

	// RetryInterval is how soon a policy waiting on a missing Secret is
	// checked again.
	RetryInterval time.Duration

	// ForgeChecks spares the forge a check that passed recently; nil
	// checks on every reconcile.
	ForgeChecks *policy.ForgeChecks
}

// +kubebuilder:rbac:groups=reflux.dev,resources=reversesyncpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=reflux.dev,resources=drifts,verbs=get;list;watch
// +kubebuilder:rbac:groups=reflux.dev,resources=reversesyncpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories,verbs=get;list;watch
// Get, by name and uncached, is for the Secrets policies and sources
// name: the signing key, the forge token, Git credentials, decryption keys
// and substituteFrom Secrets. RBAC cannot narrow get to the names they
// reference. Listing and watching Secrets (their drift) is opt-in:
// config/components/secrets.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile checks one ReverseSyncPolicy and sets Ready or Stalled.
func (r *ReverseSyncPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := time.Now()
	obj := &refluxv1.ReverseSyncPolicy{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	helper, err := patch.NewHelper(obj, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := r.finalizeStatus(ctx, obj, helper, start); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	if obj.Spec.Suspend {
		log.FromContext(ctx).Info("reconciliation is suspended for this policy")
		conditions.MarkFalse(obj, meta.ReadyCondition, refluxv1.SuspendedReason, "policy is suspended")
		conditions.Delete(obj, meta.StalledCondition)
		return ctrl.Result{}, nil
	}
	return r.reconcile(ctx, obj)
}

// reconcile runs the checks in order; the first failure decides the status.
func (r *ReverseSyncPolicyReconciler) reconcile(ctx context.Context, obj *refluxv1.ReverseSyncPolicy) (ctrl.Result, error) {
	if err := policy.Validate(&obj.Spec); err != nil {
		r.stall(obj, refluxv1.InvalidPolicyReason, err)
		return ctrl.Result{}, nil
	}
	if reason, err := r.checkSigningKey(ctx, obj); err != nil {
		if errors.Is(err, policy.ErrInvalid) {
			// The Secret exists but its content is wrong, or it is missing:
			// either way a human must act. Check again later rather than
			// stalling, because creating the Secret fixes it without a
			// spec change.
			conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", err)
			conditions.Delete(obj, meta.StalledCondition)
			return ctrl.Result{RequeueAfter: r.retryInterval()}, nil
		}
		conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", err)
		return ctrl.Result{}, err
	}
	governed, err := policy.Governed(ctx, r.Client, obj)
	if err != nil {
		conditions.MarkFalse(obj, meta.ReadyCondition, meta.ProgressingWithRetryReason, "listing Kustomizations: %s", err)
		return ctrl.Result{}, err
	}
	if reason, err := r.checkSourceBranches(ctx, obj, governed); err != nil {
		if errors.Is(err, policy.ErrInvalid) {
			r.stall(obj, reason, err)
			return ctrl.Result{}, nil
		}
		conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", err)
		return ctrl.Result{}, err
	}
	if reason, err := r.checkForge(ctx, obj, governed); err != nil {
		if errors.Is(err, policy.ErrInvalid) {
			// Fixed by a new token in the Secret, not by a spec change:
			// stalled, yet checked again later.
			r.stall(obj, reason, err)
			return ctrl.Result{RequeueAfter: r.retryInterval()}, nil
		}
		conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", err)
		return ctrl.Result{}, err
	}
	obj.Status.Kustomizations = int32(len(governed))
	if err := r.summarise(ctx, obj); err != nil {
		conditions.MarkFalse(obj, meta.ReadyCondition, meta.ProgressingWithRetryReason, "%s", err)
		return ctrl.Result{}, err
	}
	conditions.Delete(obj, meta.StalledCondition)
	conditions.MarkTrue(obj, meta.ReadyCondition, refluxv1.ValidPolicyReason,
		"policy governs %d Kustomization(s)", len(governed))
	return ctrl.Result{}, nil
}

// stall marks a configuration error: not retried until the spec changes.
func (r *ReverseSyncPolicyReconciler) stall(obj *refluxv1.ReverseSyncPolicy, reason string, err error) {
	conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", err)
	conditions.MarkTrue(obj, meta.StalledCondition, reason, "%s", err)
}

func (r *ReverseSyncPolicyReconciler) checkSigningKey(ctx context.Context, obj *refluxv1.ReverseSyncPolicy) (string, error) {
	key := obj.Spec.Git.SigningKey
	if key == nil || obj.Spec.Git.ReportOnly {
		return "", nil
	}
	secret, err := r.policySecret(ctx, obj, "spec.git.signingKey.secretRef", "signing", key.SecretRef.Name)
	if err != nil {
		return refluxv1.SigningKeyNotFoundReason, err
	}
	if err := policy.CheckSigningKey(key.Type, secret.Data); err != nil {
		return refluxv1.SigningKeyNotFoundReason, fmt.Errorf("signing Secret %s/%s: %w", obj.Namespace, key.SecretRef.Name, err)
	}
	return "", nil
}

// policySecret reads a Secret the policy names at field, uncached as Flux
// reads Secrets: a missing one is the user's to create (a FieldError, so
// policy.ErrInvalid); any other error is retried.
func (r *ReverseSyncPolicyReconciler) policySecret(ctx context.Context, obj *refluxv1.ReverseSyncPolicy,
	field, what, name string) (*corev1.Secret, error) {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: name}
	secret := &corev1.Secret{}
	if err := r.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &policy.FieldError{Field: field, Reason: fmt.Sprintf("Secret %s not found", key)}
		}
		return nil, fmt.Errorf("getting %s Secret %s: %w", what, key, err)
	}
	return secret, nil
}

// checkSourceBranches refuses a branch prefix that could collide with the
// source branch of any governed Kustomization's GitRepository. Admission
// cannot see those branches; this check can.
func (r *ReverseSyncPolicyReconciler) checkSourceBranches(ctx context.Context, obj *refluxv1.ReverseSyncPolicy,
	governed []kustomizev1.Kustomization) (string, error) {
	for i := range governed {
		ks := &governed[i]
		repo, err := source.GitRepository(ctx, r.Client, ks)
		if apierrors.IsNotFound(err) {
			// The Kustomization reports its own missing source; there is
			// no branch to clash with yet.
			continue
		}
		if err != nil {
			return meta.ProgressingWithRetryReason, err
		}
		if repo == nil || repo.Spec.Reference == nil {
			continue
		}
		if err := policy.CheckBranchPrefix(obj.Spec.Git.BranchPrefix, repo.Spec.Reference.Branch); err != nil {
			return refluxv1.BranchPrefixConflictReason,
				fmt.Errorf("Kustomization %s/%s: %w", ks.Namespace, ks.Name, err)
		}
	}
	return "", nil
}

// summarise rebuilds the policy's drift report and pending branches from
// the Drift records of its namespace (report.Policy).
func (r *ReverseSyncPolicyReconciler) summarise(ctx context.Context, obj *refluxv1.ReverseSyncPolicy) error {
	list := &refluxv1.DriftList{}
	if err := r.List(ctx, list, client.InNamespace(obj.Namespace)); err != nil {
		return fmt.Errorf("listing drift records: %w", err)
	}
	sum := report.Policy(obj.Name, list.Items)
	obj.Status.Drift, obj.Status.DriftedObjects, obj.Status.PendingBranches = sum.Drift, sum.DriftedObjects, sum.PendingBranches
	return nil
}

func (r *ReverseSyncPolicyReconciler) finalizeStatus(ctx context.Context, obj *refluxv1.ReverseSyncPolicy,
	helper *patch.Helper, start time.Time) error {
	if conditions.IsReady(obj) || conditions.IsStalled(obj) {
		obj.Status.ObservedGeneration = obj.Generation
	}
	err := helper.Patch(ctx, obj,
		patch.WithOwnedConditions{Conditions: policyOwnedConditions},
		patch.WithFieldOwner(refluxv1.FieldManager),
	)
	if err != nil && apierrors.IsNotFound(err) {
		err = nil
	}
	if r.Metrics.MetricsRecorder != nil {
		r.Metrics.RecordDuration(ctx, obj, start)
		r.Metrics.RecordReadiness(ctx, obj)
		r.Metrics.RecordStalled(ctx, obj)
		r.Metrics.RecordSuspend(ctx, obj, obj.Spec.Suspend)
	}
	return err
}

func (r *ReverseSyncPolicyReconciler) retryInterval() time.Duration {
	if r.RetryInterval > 0 {
		return r.RetryInterval
	}
	return time.Minute
}
