package v1alpha1

import "time"

const (
	// ReverseSyncAnnotation opts a Flux Kustomization in to reverse sync.
	// A Kustomization is governed only when it carries this annotation with
	// the value ReverseSyncEnabled and a ReverseSyncPolicy in its namespace
	// selects it: the annotation alone never writes anything.
	ReverseSyncAnnotation = "reflux.dev/reverse-sync"

	// ReverseSyncEnabled is the value of ReverseSyncAnnotation that opts in.
	ReverseSyncEnabled = "enabled"

	// ReverseSyncDisabled on a HelmRelease that a governed Kustomization
	// applies opts the release's objects out: reflux then governs the
	// HelmRelease object alone, as any object the Kustomization applies.
	ReverseSyncDisabled = "disabled"

	// DismissAnnotation on a Drift record dismisses it: the hold is released
	// and Flux restores Git's value at its next reconcile.
	DismissAnnotation = "reflux.dev/dismiss"

	// DefaultManualHotfixKey and DefaultManualHotfixValue mark a live object
	// as a deliberate manual hotfix: logged, held, never written to Git.
	DefaultManualHotfixKey = "ops.source"
	// DefaultManualHotfixValue is the value of DefaultManualHotfixKey.
	DefaultManualHotfixValue = "manual"

	// DefaultBranchPrefix is the prefix of every branch reflux pushes.
	DefaultBranchPrefix = "reflux/"

	// FieldManager is the field manager reflux writes under. It must not
	// start with "kubectl": kustomize-controller strips kubectl-managed
	// fields, so a hold written as kubectl would be undone.
	FieldManager = "reflux"
)

// DriftFinalizer keeps a deleted Drift record until reflux has released its
// hold and Flux has restored Git's value, so deleting a record dismisses
// the drift instead of letting reflux record it again.
const DriftFinalizer = "reflux.dev/release-hold"

// Annotations of a hold on a live object. reflux writes them with a
// server-side apply under FieldManager, so releasing a hold removes exactly
// them and nothing another manager (or Git) owns.
const (
	// ReconcileAnnotation set to ReconcileDisabled on the in-cluster object
	// makes kustomize-controller skip it (docs/flux-behaviour.md): the one
	// way to keep a live edit alive without a commit.
	ReconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile"
	// ReconcileDisabled is the value of ReconcileAnnotation that holds.
	ReconcileDisabled = "disabled"
	// HelmDriftDetectionAnnotation set to HelmDriftDetectionDisabled on a
	// live object a Helm release rendered makes helm-controller leave it
	// out of drift detection and correction (docs/flux-behaviour.md): it
	// holds a chart's object as ReconcileAnnotation holds a Kustomization's.
	// An upgrade still applies the chart over it.
	HelmDriftDetectionAnnotation = "helm.toolkit.fluxcd.io/driftDetection"
	// HelmDriftDetectionDisabled is the value of
	// HelmDriftDetectionAnnotation that holds.
	HelmDriftDetectionDisabled = "disabled"
	// HeldByAnnotation names the Drift record that holds the object, so a
	// human reading the object knows why Flux leaves it alone. A hold taken
	// before the change was evaluated names the record it will have.
	HeldByAnnotation = "reflux.dev/held-by"
	// HeldSinceAnnotation is when the hold was applied (RFC 3339).
	HeldSinceAnnotation = "reflux.dev/held-since"
)

// HoldAnnotations are what a hold of the record writes on a live object:
// the key that makes Flux leave it alone (helm-controller's when a Helm
// release rendered the object), the record and the time.
func HoldAnnotations(record string, since time.Time, helm bool) map[string]string {
	key, value := ReconcileAnnotation, ReconcileDisabled
	if helm {
		key, value = HelmDriftDetectionAnnotation, HelmDriftDetectionDisabled
	}
	return map[string]string{key: value, HeldByAnnotation: record, HeldSinceAnnotation: since.UTC().Format(time.RFC3339)}
}

// HeldBy returns the record that holds an object with annotations, and
// whether one does: a hold is the record's name beside either Flux key.
func HeldBy(annotations map[string]string) (string, bool) {
	by := annotations[HeldByAnnotation]
	if by == "" {
		return "", false
	}
	return by, annotations[ReconcileAnnotation] == ReconcileDisabled ||
		annotations[HelmDriftDetectionAnnotation] == HelmDriftDetectionDisabled
}

// SealAnnotation on a Drift record is reflux's HMAC over the record's
// namespace, name and spec, keyed by the Secret only reflux reads. reflux
// acts only on records that carry a valid seal: a record written by hand
// (even where config/admission's policy is not installed) never causes a
// hold, a release or a write to Git.
const SealAnnotation = "reflux.dev/seal"
