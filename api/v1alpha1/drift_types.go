package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DriftKind is the kind of Drift.
const DriftKind = "Drift"

// DriftState is where a drift record is in its lifecycle.
// +kubebuilder:validation:Enum=Pending;Detected;Held;Proposed;Resolved;Dismissed;Expired
type DriftState string

const (
	// DriftPending means a live change was seen and recorded, but its Git
	// side is still being computed: no render of the revision Flux
	// applies describes the object yet. spec.written says what was
	// written and by whom; the record is filled in when the render lands.
	DriftPending DriftState = "Pending"
	// DriftDetected means the divergence was seen and recorded.
	DriftDetected DriftState = "Detected"
	// DriftHeld means reflux keeps Flux from reverting the object.
	DriftHeld DriftState = "Held"
	// DriftProposed means a branch with the change exists.
	DriftProposed DriftState = "Proposed"
	// DriftResolved means the applied revision now declares the live value.
	DriftResolved DriftState = "Resolved"
	// DriftDismissed means a user or reviewer rejected the drift; the hold
	// is released and Flux restores Git's value.
	DriftDismissed DriftState = "Dismissed"
	// DriftExpired means the hold reached its maximum age and the policy
	// says `onExpiry: Release`: the hold is released, Flux restores Git's
	// value, and the record is closed with the evidence kept.
	DriftExpired DriftState = "Expired"
)

// DriftSpec is the durable record of one drifted live object. It is written
// from the watch event that saw the change, because Flux's next reconcile
// erases the live evidence.
type DriftSpec struct {
	// Kustomization is the Flux Kustomization that applies the object.
	// +required
	Kustomization KustomizationRef `json:"kustomization"`

	// HelmRelease is the Flux HelmRelease whose Helm release rendered the
	// object, when helm-controller (not kustomize-controller) applies it.
	// Kustomization is then the one that applies the HelmRelease: its
	// policy governs the release's objects too.
	// +optional
	HelmRelease *HelmReleaseRef `json:"helmRelease,omitempty"`

	// Policy is the ReverseSyncPolicy that classified the drift.
	// +required
	Policy string `json:"policy"`

	// Object is the drifted live object.
	// +required
	Object ObjectRef `json:"object"`

	// Revision is the source revision Flux applied when the drift was seen.
	// +optional
	Revision string `json:"revision,omitempty"`

	// Fields are the drifted fields: at most 256, the most severe first
	// when more drifted (OmittedFields counts the rest).
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Fields []DriftField `json:"fields,omitempty"`

	// OmittedFields counts the drifted fields left out of Fields, which
	// holds at most 256. Such a record is never written back: its branch
	// would carry part of the live change.
	// +optional
	OmittedFields int32 `json:"omittedFields,omitempty"`

	// LastModifier is the most recent writer of a drifted field.
	// +optional
	LastModifier *Modifier `json:"lastModifier,omitempty"`

	// Written are the fields the last writer holds, with their live
	// values, while the record is Pending: what is known of the change
	// before a render says which of them diverge from Git. Cleared once
	// the record is evaluated, when Fields take over.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Written []WrittenField `json:"written,omitempty"`

	// ManualHotfix is true when the live object carries the policy's
	// manual-hotfix annotation: logged and held, never written to Git.
	// +optional
	ManualHotfix bool `json:"manualHotfix,omitempty"`

	// ManualHotfixBy names the audit event that declared the manual
	// hotfix, when the policy's manualHotfix.fromUsers or fromGroups (not
	// the annotation) made it one.
	// +optional
	ManualHotfixBy *HotfixIntent `json:"manualHotfixBy,omitempty"`

	// FirstSeen is when the divergence was first seen.
	// +required
	FirstSeen metav1.Time `json:"firstSeen"`

	// LastSeen is when the divergence was last confirmed, to within an
	// hour: confirming the same divergence again moves it only once an
	// hour has passed, so that reflux's periodic look at every object
	// does not rewrite every record.
	// +required
	LastSeen metav1.Time `json:"lastSeen"`
}

// HotfixIntent is the audit event that declared a manual hotfix.
type HotfixIntent struct {
	// User is the authenticated user of the audit event.
	User string `json:"user"`
	// Groups are the user's groups, as the audit event names them.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Groups []string `json:"groups,omitempty"`
	// Matched is the policy entry that matched: `user:NAME` from
	// fromUsers or `group:NAME` from fromGroups.
	Matched string `json:"matched"`
	// Manager is the field manager of the write.
	// +optional
	Manager string `json:"manager,omitempty"`
	// MarkedKey is the manual-hotfix annotation reflux added to the live
	// object for this hotfix. reflux removes it again when the record is
	// dismissed or its hold is released on expiry, so that a later edit is
	// not taken for a hotfix.
	// +optional
	MarkedKey string `json:"markedKey,omitempty"`
}

// KustomizationRef names a Flux Kustomization.
type KustomizationRef struct {
	// Name of the Kustomization.
	Name string `json:"name"`
	// Namespace of the Kustomization.
	Namespace string `json:"namespace"`
	// Cluster is the remote cluster Flux applies the Kustomization to, and
	// the record's object lives in, as the Kustomization's spec.kubeConfig
	// names it: "Secret/<name>" for a kubeconfig Secret in the
	// Kustomization's namespace. Empty for the cluster reflux runs in.
	// +optional
	Cluster string `json:"cluster,omitempty"`
}

// HelmReleaseRef names a Flux HelmRelease and the Helm release
// helm-controller made of it.
type HelmReleaseRef struct {
	// Name of the HelmRelease.
	Name string `json:"name"`
	// Namespace of the HelmRelease.
	Namespace string `json:"namespace"`
	// Release is the Helm release the object was compared with,
	// NAMESPACE/NAME.vVERSION, as helm-controller's messages name it.
	// +optional
	Release string `json:"release,omitempty"`
	// Cluster is the remote cluster helm-controller installs the release
	// in, through the HelmRelease's spec.kubeConfig: its Secret, as
	// Secret/NAME or Secret/NAME#KEY, or its workload identity ConfigMap,
	// as ConfigMap/NAME, in the HelmRelease's namespace. Empty when the
	// release is installed in the cluster reflux runs in. The object, its
	// hold and Helm's storage of the release live there; the record stays
	// here, beside the Kustomization that applies the HelmRelease.
	// +optional
	Cluster string `json:"cluster,omitempty"`
}

// ObjectRef names a live object.
type ObjectRef struct {
	// APIVersion of the object.
	APIVersion string `json:"apiVersion"`
	// Kind of the object.
	Kind string `json:"kind"`
	// Namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
	// UID of the object when the drift was seen.
	// +optional
	UID string `json:"uid,omitempty"`
}

// DriftField is one drifted field.
type DriftField struct {
	// Pointer is the JSON pointer of the field in the rendered object.
	Pointer string `json:"pointer"`

	// ChangeType says how the live value diverges.
	ChangeType ChangeType `json:"changeType"`

	// GitValue is the JSON value Git declares; empty for an Add. Secret
	// values are masked, as Flux's jsondiff masks them.
	// +optional
	GitValue string `json:"gitValue,omitempty"`

	// LiveValue is the JSON value seen live; empty for a Remove. Secret
	// values are masked.
	// +optional
	LiveValue string `json:"liveValue,omitempty"`

	// Origin is where the source declares the field.
	// +optional
	Origin *FieldOrigin `json:"origin,omitempty"`

	// Action decided by the policy.
	Action Action `json:"action"`

	// Severity decided by the policy.
	Severity Severity `json:"severity"`

	// Rule is the name or index of the rule that matched; empty when a
	// default applied.
	// +optional
	Rule string `json:"rule,omitempty"`

	// FluxReverts is false when Flux would leave the live value in place
	// (for example a field owned by a non-kubectl manager that Git does not
	// declare).
	FluxReverts bool `json:"fluxReverts"`

	// Modifier is the last writer of this field.
	// +optional
	Modifier *Modifier `json:"modifier,omitempty"`

	// FirstSeen is when this field's divergence was first seen.
	// +optional
	FirstSeen *metav1.Time `json:"firstSeen,omitempty"`
}

// WrittenField is a field a writer holds on the live object.
type WrittenField struct {
	// Pointer is the JSON pointer of the field in the live object.
	Pointer string `json:"pointer"`
	// LiveValue is the JSON value seen live. Secret values are masked.
	// +optional
	LiveValue string `json:"liveValue,omitempty"`
}

// FieldOrigin is the place in the source that declares a field.
type FieldOrigin struct {
	// File relative to the repository root.
	File string `json:"file"`
	// Line, 1-based.
	Line int32 `json:"line"`
	// Column, 1-based, of the value node.
	Column int32 `json:"column"`
	// Kind of declaration, such as resource, patch or images.
	Kind string `json:"kind"`
	// Refused names why the field could not be mapped, if it could not.
	// +optional
	Refused string `json:"refused,omitempty"`
	// Why says in one sentence why the field could not be mapped.
	// +optional
	Why string `json:"why,omitempty"`
	// EditAt is FILE:LINE:COL of the declaration a reviewer edits instead
	// of the refused field, when there is one: a generator's name line for
	// a hash-suffixed name, the resources entry of a remote base.
	// +optional
	EditAt string `json:"editAt,omitempty"`
	// ValuesKeys are the Helm values keys that set a field a chart
	// rendered (spec.helmRelease): one for a key File and Line set in the
	// HelmRelease's spec.values, or that only the chart's defaults set;
	// several for a value the chart computes from them.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	ValuesKeys []string `json:"valuesKeys,omitempty"`
	// Template is FILE:LINE of the chart's template that renders the
	// field, for a field a chart rendered.
	// +optional
	Template string `json:"template,omitempty"`
}

// DeleteOperation is Modifier.Operation for a deleted object.
const DeleteOperation = "Delete"

// Modifier is a writer of a live field.
type Modifier struct {
	// Manager is the field manager from managedFields.
	Manager string `json:"manager"`
	// Operation is Update or Apply, as in managedFields, or Delete for a
	// deleted object.
	// +optional
	Operation string `json:"operation,omitempty"`
	// User is the authenticated user from the audit log, when known.
	// +optional
	User string `json:"user,omitempty"`
	// Groups of User, from the audit log.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Groups []string `json:"groups,omitempty"`
	// Time of the write.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// DriftStatus is the lifecycle of a drift record.
type DriftStatus struct {
	// ObservedGeneration is the last generation acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// State of the record.
	// +optional
	State DriftState `json:"state,omitempty"`

	// Severity is the highest severity among the fields.
	// +optional
	Severity Severity `json:"severity,omitempty"`

	// Action says what happens to the record's drift: the strongest action
	// among its fields (Merge, then Alert, then Ignore), or ManualHotfix
	// for a declared hotfix, which is logged and held and never written
	// to Git whatever its fields' rules say.
	// +optional
	Action DriftAction `json:"action,omitempty"`

	// HeldSince is when the hold was applied. On a closed record
	// (Resolved, Dismissed or Expired) it says the hold's release is
	// still owed: reflux retries the release until it happens, then
	// clears heldSince.
	// +optional
	HeldSince *metav1.Time `json:"heldSince,omitempty"`

	// HoldExpiresAt is when the hold reaches its maximum age: heldSince
	// plus the policy's manualHotfix.maxAge for a manual hotfix, or the
	// shortest holdFor of the rules holding its fields. Unset when the hold
	// has no limit or there is no hold.
	// +optional
	HoldExpiresAt *metav1.Time `json:"holdExpiresAt,omitempty"`

	// Fingerprint identifies the record's drift: every field's object,
	// pointer, change, live value and action. It changes whenever what the
	// record says diverges changes.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`

	// Branch is where reflux writes this record's change. It is recorded
	// before the push, as the write intent, and kept once the push
	// succeeded: a branch that reflux pushed (Commit set) and that is gone
	// unmerged was closed by a reviewer, so the record is dismissed and the
	// branch is never pushed again.
	// +optional
	Branch string `json:"branch,omitempty"`

	// BranchFingerprint identifies the drift set Branch is written for,
	// recorded with the write intent.
	// +optional
	BranchFingerprint string `json:"branchFingerprint,omitempty"`

	// Commit at the head of Branch, once reflux pushed it.
	// +optional
	Commit string `json:"commit,omitempty"`

	// PullRequest is the URL of the pull request reflux opened for Branch,
	// when the policy sets spec.git.pullRequest.
	// +optional
	PullRequest string `json:"pullRequest,omitempty"`

	// Closed says how and by whom the record was closed (Resolved,
	// Dismissed or Expired); unset while it is open.
	// +optional
	Closed *DriftClosure `json:"closed,omitempty"`

	// Conditions holds ReverseSynced, which says whether a branch carries
	// the record's change and why not, HoldExpired once the hold
	// reached its maximum age, and LostLive once Flux undid the held live
	// change over its hold (a Helm upgrade, or an apply already under way).
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Seal repeats the reflux.dev/seal annotation where users do not
	// write: a record whose annotations were replaced wholesale still
	// proves reflux wrote its spec, and is not deleted as hand-made.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Seal string `json:"seal,omitempty"`
}

// DriftAction is what happens to a record's drift, as its status and
// printer columns say.
// +kubebuilder:validation:Enum=Merge;Alert;Ignore;ManualHotfix
type DriftAction string

const (
	// DriftMerge: a field is written to a branch for review.
	DriftMerge DriftAction = "Merge"
	// DriftAlert: a field is reported with its severity, on a prefilled
	// needs-decision branch.
	DriftAlert DriftAction = "Alert"
	// DriftIgnore: the drift is only logged.
	DriftIgnore DriftAction = "Ignore"
	// DriftManualHotfix: a declared manual hotfix, logged and held, never
	// written to Git.
	DriftManualHotfix DriftAction = "ManualHotfix"
)

// DriftClosure says how a record was closed.
type DriftClosure struct {
	// Reason is how the record closed, in CamelCase: Merged, Reverted,
	// Dismissed, RecordDeleted, BranchDeleted, PullRequestClosed,
	// HoldExpired or NoDrift.
	Reason string `json:"reason"`
	// Message says it in a sentence.
	// +optional
	Message string `json:"message,omitempty"`
	// By names who closed it: the user from the audit log with the field
	// manager, or the field manager alone; empty when unknown.
	// +optional
	By string `json:"by,omitempty"`
	// Revision is the revision Flux had applied when the record closed.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Time the record closed.
	Time metav1.Time `json:"time"`
}

// Reasons a record closes (DriftClosure.Reason).
const (
	// ClosedMergedReason: the applied revision declares the live value.
	ClosedMergedReason = "Merged"
	// ClosedRevertedReason: while held, the live object came back to the
	// applied revision's values, by hand or by another tool.
	ClosedRevertedReason = "Reverted"
	// ClosedDismissedReason: a user annotated the record
	// reflux.dev/dismiss=true.
	ClosedDismissedReason = "Dismissed"
	// ClosedRecordDeletedReason: a user deleted the record.
	ClosedRecordDeletedReason = "RecordDeleted"
	// ClosedBranchDeletedReason: a reviewer deleted the pushed branch
	// without merging it.
	ClosedBranchDeletedReason = "BranchDeleted"
	// ClosedPullRequestClosedReason: a reviewer closed the pull request
	// without merging it.
	ClosedPullRequestClosedReason = "PullRequestClosed"
	// ClosedHoldExpiredReason: the hold reached its maximum age and the
	// policy releases it (onExpiry: Release).
	ClosedHoldExpiredReason = "HoldExpired"
	// ClosedNoDriftReason: a Pending record's render found nothing that
	// diverges from Git: the change was Git's value, or was undone before
	// it could be evaluated.
	ClosedNoDriftReason = "NoDrift"
)

// GetConditions returns the status conditions.
func (in *Drift) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions sets the status conditions.
func (in *Drift) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Kustomization",type="string",JSONPath=".spec.kustomization.name"
// +kubebuilder:printcolumn:name="Kind",type="string",JSONPath=".spec.object.kind"
// +kubebuilder:printcolumn:name="Object",type="string",JSONPath=".spec.object.name"
// +kubebuilder:printcolumn:name="Severity",type="string",JSONPath=".status.severity"
// +kubebuilder:printcolumn:name="Action",type="string",JSONPath=".status.action"
// +kubebuilder:printcolumn:name="State",type="string",JSONPath=".status.state"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".spec.kustomization.cluster",priority=1
// +kubebuilder:printcolumn:name="Closed",type="string",JSONPath=".status.closed.reason",priority=1
// +kubebuilder:printcolumn:name="Branch",type="string",JSONPath=".status.branch",priority=1
// +kubebuilder:printcolumn:name="Expires",type="date",JSONPath=".status.holdExpiresAt",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".spec.firstSeen"

// Drift records one live object that diverges from the revision Flux
// applied. It outlives Flux's revert of the live object and is owned by
// nothing Flux prunes.
type Drift struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DriftSpec   `json:"spec,omitempty"`
	Status DriftStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DriftList is a list of Drift.
type DriftList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Drift `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Drift{}, &DriftList{})
}
