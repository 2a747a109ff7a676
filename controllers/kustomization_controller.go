package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apiacl "github.com/fluxcd/pkg/apis/acl"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/policy"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/report"
	"github.com/reflux-dev/reflux/reverse/source"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

// kustomizationOwnedConditions are the conditions reflux owns on a Flux
// Kustomization; kustomize-controller owns the rest, and reflux's status
// patch never touches them.
var kustomizationOwnedConditions = []string{refluxv1.DriftedCondition, refluxv1.ReverseSyncedCondition}

// KustomizationReconciler governs opted-in Kustomizations: it asks for the
// applied revision's render, publishes what the engine needs, keeps the
// live watches in step, and reports drift in the Drifted and ReverseSynced
// conditions. It never waits on a render or on Git: those run on their own
// workers and come back as reconcile requests.
type KustomizationReconciler struct {
	client.Client
	runtimectrl.Metrics
	// Governor and Watcher are the hub's engine and live watches.
	Governor *governor.Governor
	Watcher  *Watcher
	// Remote are the engines of remote clusters (spec.kubeConfig); nil
	// governs none, reporting such Kustomizations as unsupported.
	Remote   RemoteEngines
	Renderer *desired.Renderer
	Drift    *governor.Metrics
	// Events records the Kustomization's events (Flux's recorder); nil
	// records none.
	Events governor.EventRecorder
	// APIReader reads uncached, where a cached read could be older than
	// the reconciler's own last write; nil trusts the cache.
	APIReader client.Reader

	// RetryInterval is how soon an unavailable artifact is tried again.
	RetryInterval time.Duration
	// SlowRender is how long a render may take before the Drifted
	// condition says so.
	SlowRender time.Duration
	// DefaultServiceAccount and NoCrossNamespaceRefs are
	// kustomize-controller's flags of the same names (cmd/manager's
	// Options).
	DefaultServiceAccount string
	NoCrossNamespaceRefs  bool
}

// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories;buckets,verbs=get;list;watch
// +kubebuilder:rbac:groups=reflux.dev,resources=drifts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=reflux.dev,resources=drifts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=reflux.dev,resources=drifts/finalizers,verbs=update
// substituteFrom ConfigMaps are read uncached, by name (cmd/manager's ClientOptions).
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// The objects Flux applies are not granted here: the live watches list
// and watch them, dry runs and holds patch them, under the aggregated
// ClusterRole reflux-workloads (config/rbac/workloads/workloads_role.yaml), an
// explicit list of kinds users extend. A */* grant would read every
// Secret in the cluster (issue 11).
// Dry runs, holds and releases impersonate a Kustomization's
// ServiceAccount, as kustomize-controller's applies do.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// A remote cluster named by a workload identity ConfigMap
// (spec.kubeConfig.configMapRef) is reached with a token of the
// ServiceAccount it names, as kustomize-controller reaches it.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create

// Reconcile brings one Kustomization's governance and drift report up to
// date.
func (r *KustomizationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := time.Now()
	obj := &kustomizev1.Kustomization{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	governing, err := policy.Governing(ctx, r.Client, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	patcher := newConditionsPatcher(r.Client, obj, kustomizationOwnedConditions...)
	defer func() {
		if err := patcher.Patch(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
		r.Metrics.RecordCondition(ctx, obj, refluxv1.DriftedCondition)
		r.Metrics.RecordDuration(ctx, obj, start)
	}()
	if governing == nil || governing.Spec.Suspend || !obj.DeletionTimestamp.IsZero() {
		// Not (or no longer) governed: nothing of reflux's stays on it.
		r.forget(ctx, req.NamespacedName)
		conditions.Delete(obj, refluxv1.DriftedCondition)
		conditions.Delete(obj, refluxv1.ReverseSyncedCondition)
		return ctrl.Result{}, nil
	}
	return r.reconcile(ctx, obj, governing)
}

// reconcile runs the steps in order. A configuration error stalls (the
// condition says why, and no retry is scheduled: a spec change brings the
// reconciler back); a transient one is retried with backoff.
func (r *KustomizationReconciler) reconcile(ctx context.Context, obj *kustomizev1.Kustomization,
	governing *refluxv1.ReverseSyncPolicy) (ctrl.Result, error) {
	if err := tenancy.CheckSourceRef(obj, r.NoCrossNamespaceRefs); err != nil {
		// Refused as Flux refuses it, before anything else: reflux must
		// not act for it, even on what an earlier spec let it govern.
		r.forget(ctx, keyOf(obj))
		conditions.MarkUnknown(obj, refluxv1.DriftedCondition, apiacl.AccessDeniedReason, "%s", err)
		ctrl.LoggerFrom(ctx).Error(err, "Kustomization refused", "reason", apiacl.AccessDeniedReason)
		return ctrl.Result{}, nil // stalled until the spec changes
	}
	tgt, err := r.targetOf(ctx, obj)
	if err != nil {
		r.unsupported(ctx, obj, refluxv1.RemoteClusterUnsupportedReason, err)
		return ctrl.Result{}, nil // until the spec changes
	}
	if tgt.engine == nil {
		// No engine could be built: the kubeconfig Secret cannot be read
		// or used. The Secret is not watched, so it is read again soon.
		conditions.MarkUnknown(obj, refluxv1.DriftedCondition, refluxv1.ClusterUnreachableReason, "%s", tgt.down)
		ctrl.LoggerFrom(ctx).Info("cannot reach the remote cluster", "reason", refluxv1.ClusterUnreachableReason, "error", tgt.down.Error())
		return ctrl.Result{RequeueAfter: r.retryInterval()}, nil
	}
	eng := tgt.engine
	if obj.Status.LastAppliedRevision == "" {
		conditions.MarkUnknown(obj, refluxv1.DriftedCondition, refluxv1.KustomizationNotReadyReason,
			"Flux has applied no revision yet; drift is computed against an applied revision only")
		return ctrl.Result{}, nil // the Kustomization's next status change brings us back
	}
	classifier, err := classify.New(&governing.Spec)
	if err != nil {
		conditions.MarkUnknown(obj, refluxv1.DriftedCondition, refluxv1.InvalidPolicyReason,
			"ReverseSyncPolicy %s: %s", governing.Name, err)
		return ctrl.Result{}, nil // stalled until the policy changes
	}
	src, err := source.Resolve(ctx, r.Client, obj)
	if err != nil {
		conditions.MarkUnknown(obj, refluxv1.DriftedCondition, refluxv1.ArtifactUnavailableReason, "%s", err)
		ctrl.LoggerFrom(ctx).Info("cannot compute drift yet", "reason", refluxv1.ArtifactUnavailableReason, "error", err.Error())
		return ctrl.Result{RequeueAfter: r.retryInterval()}, nil
	}
	gov := &governor.Governed{Kustomization: obj.DeepCopy(), Policy: governing.DeepCopy(), Classifier: classifier,
		SourceRevision: src.Artifact.Revision, SourceInterval: src.Interval, RepoURL: src.URL, SubstituteFrom: src.SubstituteFrom,
		Identity: tenancy.Identity(obj, r.DefaultServiceAccount), Cluster: tgt.cluster}
	rendering := r.render(obj, src)
	gov.Manifests = rendering.Manifests
	render := rendering.Render
	status := eng.Governor.Publish(gov, render)
	if err := eng.Watcher.Ensure(keyOf(obj), watchedKinds(obj, render)); err != nil && tgt.down == nil {
		conditions.MarkUnknown(obj, refluxv1.DriftedCondition, meta.ProgressingWithRetryReason, "%s", err)
		return ctrl.Result{}, err
	}
	if tgt.cluster != "" {
		// A rotated kubeconfig Secret may have moved the Kustomization to
		// another engine after the fleet handed this one out, and that
		// engine has already forgotten it: it must not go on governing
		// it beside its successor. The next reconcile publishes to that.
		if now, ok := r.Remote.Of(keyOf(obj)); !ok || now != eng {
			eng.Forget(ctx, keyOf(obj))
			return ctrl.Result{Requeue: true}, nil
		}
	}
	open, err := r.report(ctx, obj, eng, rendering, status, eng.Watcher.Forbidden(keyOf(obj)))
	if err != nil {
		return ctrl.Result{}, err
	}
	if tgt.down != nil {
		// Said last, over what the engine reported: nothing it says of
		// the cluster is current while the cluster does not answer. The
		// fleet's probe brings the reconciler back when it does.
		conditions.MarkUnknown(obj, refluxv1.DriftedCondition, refluxv1.ClusterUnreachableReason, "%s", tgt.down)
	}
	return ctrl.Result{RequeueAfter: r.requeueAfter(obj, gov, rendering, open)}, nil
}

// render asks for the source's revision's render without waiting for it.
// The state's Render is the one to publish: the applied revision's when
// ready (Ready), else the newest there is, which the engine uses only
// for the objects a newer revision leaves as they were.
func (r *KustomizationReconciler) render(obj *kustomizev1.Kustomization, src source.Source) desired.State {
	state := r.Renderer.Want(desired.Request{Kustomization: obj, Artifact: src.Artifact, SubstituteFrom: src.SubstituteFrom})
	r.Drift.SetBuildsPerRevision(keyOf(obj), state.Builds)
	return state
}

// report writes the Drifted and ReverseSynced conditions and the drift
// gauges, and hands the records to the engine's write-back.
func (r *KustomizationReconciler) report(ctx context.Context, obj *kustomizev1.Kustomization, eng *Engine, rendering desired.State,
	status governor.Status, watchDenied []*WatchForbiddenError) ([]refluxv1.Drift, error) {
	id := keyOf(obj)
	all, err := r.records(ctx, id)
	if err != nil {
		return nil, err
	}
	// Only what reflux itself recorded is reported; a record it did not
	// write is deleted when the engine looks at it.
	all = eng.Governor.Sealed(all)
	eng.Governor.Report(id, all)
	eng.Governor.ScheduleExpiry(all)
	open := record.Open(all)
	r.Drift.Report(obj, open)
	r.Drift.ReportExpired(obj, all)
	denied := make([]error, 0, len(watchDenied))
	for _, err := range watchDenied {
		denied = append(denied, err)
	}
	if c := report.Drifted(report.DriftedInput{
		Applied: obj.Status.LastAppliedRevision, Render: rendering, Engine: status, Open: open, WatchDenied: denied,
		Previous: conditions.Get(obj, refluxv1.DriftedCondition), SlowRender: r.slowRender(), Now: time.Now(),
	}); c != nil {
		c.ObservedGeneration = obj.Generation
		conditions.Set(obj, c)
	}
	if c := governor.ReverseSynced(status.WriteBack); c != nil {
		c.ObservedGeneration = obj.Generation
		conditions.Set(obj, c)
	}
	return open, nil
}

// requeueAfter schedules the next look: soon while a render is slow to
// come (so the condition can say so), at the source's interval while
// branches await review (their checks are bounded to one per interval),
// and at the Kustomization's interval otherwise, which drives the resync.
func (r *KustomizationReconciler) requeueAfter(obj *kustomizev1.Kustomization, gov *governor.Governed,
	rendering desired.State, open []refluxv1.Drift) time.Duration {
	after := obj.GetRequeueAfter()
	if rendering.Building {
		if wait := r.slowRender() - time.Since(rendering.Since); wait > 0 && wait < after {
			after = wait
		}
	}
	for _, d := range open {
		if d.Status.Branch != "" && gov.SourceInterval > 0 && gov.SourceInterval < after {
			after = gov.SourceInterval
		}
	}
	return after
}

// records lists the Kustomization's drift records from the cache.
func (r *KustomizationReconciler) records(ctx context.Context, id types.NamespacedName) ([]refluxv1.Drift, error) {
	list := &refluxv1.DriftList{}
	if err := r.List(ctx, list, client.InNamespace(id.Namespace), client.MatchingLabels{
		record.KustomizationNameLabel: id.Name, record.KustomizationNamespaceLabel: id.Namespace,
	}); err != nil {
		return nil, fmt.Errorf("listing drift records: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

func (r *KustomizationReconciler) retryInterval() time.Duration {
	if r.RetryInterval > 0 {
		return r.RetryInterval
	}
	return 30 * time.Second
}

func (r *KustomizationReconciler) slowRender() time.Duration {
	if r.SlowRender > 0 {
		return r.SlowRender
	}
	return 10 * time.Second
}

func keyOf(ks *kustomizev1.Kustomization) types.NamespacedName {
	return types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
}

// watchedKinds are the kinds to watch: every kind in Flux's inventory, so
// live changes are caught before reflux's first render, and every kind in
// the render.
func watchedKinds(ks *kustomizev1.Kustomization, render *desired.Render) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	add := func(gvk schema.GroupVersionKind) {
		if !seen[gvk] && gvk.Kind != "" && gvk.Version != "" {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	if inv := ks.Status.Inventory; inv != nil {
		for _, e := range inv.Entries {
			if gvk, err := inventoryGVK(e); err == nil {
				add(gvk)
			}
		}
	}
	if render != nil {
		for _, gvk := range render.GVKs {
			add(gvk)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// inventoryGVK parses an inventory entry: its ID is
// namespace_name_group_kind (names and namespaces never hold "_").
func inventoryGVK(e kustomizev1.ResourceRef) (schema.GroupVersionKind, error) {
	parts := strings.Split(e.ID, "_")
	if len(parts) != 4 {
		return schema.GroupVersionKind{}, errors.New("malformed inventory ID " + e.ID)
	}
	return schema.GroupVersionKind{Group: parts[2], Version: e.Version, Kind: parts[3]}, nil
}
