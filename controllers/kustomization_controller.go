package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/desired"
)

// KustomizationReconciler governs opted-in Kustomizations: it renders the
// applied revision, keeps the live watches in step with it, resyncs every
// object at the Kustomization's interval, and reports the drift.
type KustomizationReconciler struct {
	client.Client
	Engine  *Engine
	Watcher *Watcher
	Desired *desired.Cache
	Handler reverse.Handler
	Metrics *DriftMetrics
	Events  EventRecorder

	// RetryInterval is how soon an unavailable artifact is tried again.
	RetryInterval time.Duration

	mu          sync.Mutex
	resyncs     map[string]resyncState
	fingerprint map[string]string
}

type resyncState struct {
	revision   string
	generation int64
	at         time.Time
}

// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations/status,verbs=get;patch;update
// Dry-run applies (drift detection) and holds patch any kind Flux applies;
// the live watches list and watch them.
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories;buckets,verbs=get;list;watch
// +kubebuilder:rbac:groups=reflux.dev,resources=drifts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=reflux.dev,resources=drifts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=reflux.dev,resources=drifts/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch;patch

// Reconcile brings one Kustomization's governance, render, watches and
// drift report up to date.
func (r *KustomizationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ks := &kustomizev1.Kustomization{}
	if err := r.Get(ctx, req.NamespacedName, ks); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	policy, err := GoverningPolicy(ctx, r.Client, ks)
	if err != nil {
		return ctrl.Result{}, err
	}
	if policy == nil || policy.Spec.Suspend || !ks.DeletionTimestamp.IsZero() {
		r.forget(ks.Namespace, ks.Name)
		return ctrl.Result{}, r.patchDrifted(ctx, ks, nil)
	}
	g, reason, err := r.govern(ctx, ks, policy)
	if err != nil {
		cond := conditions.UnknownCondition(refluxv1.DriftedCondition, reason, "%s", err)
		if perr := r.patchDrifted(ctx, ks, cond); perr != nil {
			return ctrl.Result{}, perr
		}
		if reason == refluxv1.KustomizationNotReadyReason {
			return ctrl.Result{}, nil // the Kustomization's next status change brings us back
		}
		ctrl.LoggerFrom(ctx).Info("cannot compute drift yet", "reason", reason, "error", err.Error())
		return ctrl.Result{RequeueAfter: r.retryInterval()}, nil
	}
	resynced := r.resyncDue(ks)
	if resynced {
		if err := r.resync(ctx, g); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.report(ctx, g, resynced); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: ks.GetRequeueAfter()}, nil
}

// govern renders the applied revision and publishes it to the live path.
func (r *KustomizationReconciler) govern(ctx context.Context, ks *kustomizev1.Kustomization,
	policy *refluxv1.ReverseSyncPolicy) (*Governed, string, error) {
	// While Flux reconciles, Ready is Unknown and the last applied revision
	// still stands; only a failed or never-applied Kustomization stops us.
	if conditions.IsFalse(ks, meta.ReadyCondition) || ks.Status.LastAppliedRevision == "" {
		return nil, refluxv1.KustomizationNotReadyReason,
			errors.New("Kustomization is not Ready; drift is computed against an applied revision only")
	}
	artifact, err := sourceArtifact(ctx, r.Client, ks)
	if err != nil {
		return nil, refluxv1.ArtifactUnavailableReason, err
	}
	subst, err := substituteFrom(ctx, r.Client, ks)
	if err != nil {
		return nil, refluxv1.ArtifactUnavailableReason, err
	}
	render, err := r.Desired.Get(ctx, desired.Request{Kustomization: ks, Artifact: artifact, SubstituteFrom: subst})
	if err != nil {
		return nil, refluxv1.ArtifactUnavailableReason, err
	}
	classifier, err := classify.New(&policy.Spec)
	if err != nil {
		return nil, refluxv1.InvalidPolicyReason, err
	}
	g := &Governed{Kustomization: ks, Policy: policy, Classifier: classifier, Render: render}
	r.Engine.Govern(g)
	if err := r.Watcher.Ensure(ctx, ks.Namespace+"/"+ks.Name, render.GVKs); err != nil {
		return nil, meta.ProgressingWithRetryReason, err
	}
	return g, "", nil
}

// resyncDue reports whether the safety-net resync should run: on a new
// revision or generation, and at the Kustomization's interval otherwise.
func (r *KustomizationReconciler) resyncDue(ks *kustomizev1.Kustomization) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.resyncs[ks.Namespace+"/"+ks.Name]
	return !ok || s.revision != ks.Status.LastAppliedRevision || s.generation != ks.Generation ||
		time.Since(s.at) >= ks.Spec.Interval.Duration
}

// resync evaluates every rendered object from the live cache, and settles
// records of objects that left the render.
func (r *KustomizationReconciler) resync(ctx context.Context, g *Governed) error {
	keys := make([]desired.ObjectKey, 0, len(g.Render.Objects))
	for k := range g.Render.Objects {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	var errs []error
	for _, k := range keys {
		want := g.Render.Objects[k]
		live, ok := r.Watcher.Get(want.GroupVersionKind(), want.GetNamespace(), want.GetName())
		if !ok {
			continue
		}
		if err := r.Engine.Evaluate(ctx, g, live, time.Time{}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("resyncing live objects: %w", err)
	}
	r.mu.Lock()
	r.resyncs[g.Kustomization.Namespace+"/"+g.Kustomization.Name] = resyncState{
		revision: g.Render.Revision, generation: g.Kustomization.Generation, at: time.Now(),
	}
	r.mu.Unlock()
	return nil
}

// patchDrifted writes (or, when cond is nil, removes) the Drifted
// condition with one status patch under reflux's field manager. The patch
// carries the resourceVersion it was computed from, so it can never
// overwrite a condition kustomize-controller wrote meanwhile: on a conflict
// the reconcile is retried from a fresh read.
func (r *KustomizationReconciler) patchDrifted(ctx context.Context, ks *kustomizev1.Kustomization, cond *metav1.Condition) error {
	cur := conditions.Get(ks, refluxv1.DriftedCondition)
	if cond == nil && cur == nil {
		return nil
	}
	if cond != nil && cur != nil && cur.Status == cond.Status && cur.Reason == cond.Reason && cur.Message == cond.Message {
		return nil
	}
	base := ks.DeepCopy()
	if cond == nil {
		conditions.Delete(ks, refluxv1.DriftedCondition)
	} else {
		cond.ObservedGeneration = ks.Generation
		conditions.Set(ks, cond)
	}
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := r.Status().Patch(ctx, ks, patch, client.FieldOwner(refluxv1.FieldManager)); err != nil {
		return fmt.Errorf("patching Drifted condition: %w", err)
	}
	return nil
}

func (r *KustomizationReconciler) forget(namespace, name string) {
	key := namespace + "/" + name
	r.Engine.Release(namespace, name)
	r.Watcher.Forget(key)
	r.Desired.Forget(namespace, name)
	r.mu.Lock()
	delete(r.resyncs, key)
	delete(r.fingerprint, key)
	r.mu.Unlock()
	r.Metrics.forget(namespace, name)
}

func (r *KustomizationReconciler) retryInterval() time.Duration {
	if r.RetryInterval > 0 {
		return r.RetryInterval
	}
	return 30 * time.Second
}
