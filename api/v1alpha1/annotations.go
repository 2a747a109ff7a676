package v1alpha1

const (
	// ReverseSyncAnnotation opts a Flux Kustomization in to reverse sync.
	// A Kustomization is governed only when it carries this annotation with
	// the value ReverseSyncEnabled and a ReverseSyncPolicy in its namespace
	// selects it: the annotation alone never writes anything.
	ReverseSyncAnnotation = "reflux.dev/reverse-sync"

	// ReverseSyncEnabled is the value of ReverseSyncAnnotation that opts in.
	ReverseSyncEnabled = "enabled"

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
