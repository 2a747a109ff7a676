package v1alpha1

// Condition types reflux owns. Ready and Stalled come from
// github.com/fluxcd/pkg/apis/meta.
const (
	// DriftedCondition on a Kustomization reports whether its live objects
	// diverge from the applied revision.
	DriftedCondition = "Drifted"

	// ReverseSyncedCondition on a Kustomization reports the state of the
	// write-back of its drift to Git. On a Drift record it says whether a
	// branch carries the record's change (True, BranchPushed) or why none
	// does (False, with the write-back's reason). On a HelmRelease it sums
	// up the records of the release's objects: each distinct outcome once,
	// False when any of them failed.
	ReverseSyncedCondition = "ReverseSynced"

	// HoldExpiredCondition on a Drift record is True once its hold
	// reached its maximum age (status.holdExpiresAt). Its reason says what
	// reflux did: HoldKeptReason or HoldReleasedReason.
	HoldExpiredCondition = "HoldExpired"

	// LostLiveCondition on a Drift record is True once the live change it
	// records was undone by Flux over its hold, by no one's decision: the
	// record is then the only evidence of it, and stays open with its
	// proposal. Its reason says who applied over the hold:
	// OverwrittenByFluxReason or OverwrittenByUpgradeReason.
	LostLiveCondition = "LostLive"

	// ReverseDriftedCondition on a HelmRelease reports whether the live
	// objects of its latest release diverge from what helm-controller
	// applied, as reflux records them. It is not Drifted, which
	// helm-controller owns on a HelmRelease (set in its warn and enabled
	// drift detection modes): two controllers forcing one condition would
	// overwrite each other at every reconcile. Its reasons are Drifted's
	// DriftDetected and NoDrift, ReleaseUnreadableReason and
	// ChartRenderFailedReason when reflux cannot evaluate or trace, and
	// ArtifactUnavailableReason and ValuesInvalidReason when
	// helm-controller cannot upgrade the release.
	ReverseDriftedCondition = "ReverseDrifted"
)

// Reasons for the ReverseDrifted condition besides Drifted's.
const (
	// ReleaseUnreadableReason: the latest release helm-controller made
	// cannot be read from Helm's storage, so live changes of its objects
	// cannot be compared; they are kept and tried again.
	ReleaseUnreadableReason = "ReleaseUnreadable"
	// RemoteClusterReason: the HelmRelease installs into the cluster its
	// spec.kubeConfig names, and reflux cannot govern it there: the
	// kubeConfig names neither a Secret nor a ConfigMap, or this reflux
	// runs without remote clusters. Live changes of its objects are not
	// seen.
	RemoteClusterReason = "RemoteCluster"
	// ChartRenderFailedReason: the chart of the latest release does not
	// render here (a template that looks the cluster up, for example), so
	// no values key is found for a drifted field. Changes are still held
	// and recorded, their fields refused as chart-render-failed.
	ChartRenderFailedReason = "ChartRenderFailed"
	// ValuesInvalidReason: helm-controller cannot compose the
	// HelmRelease's values (its Ready condition is False with
	// ValuesError: a valuesFrom file whose YAML does not parse, for
	// example), so it upgrades nothing. Live changes are compared with
	// the release it last made, held and recorded as ever; the message
	// says what helm-controller said. Drift's ArtifactUnavailableReason
	// is the same for a chart artifact helm-controller cannot get.
	ValuesInvalidReason = "ValuesInvalid"
)

// Reasons for the LostLive condition.
const (
	// OverwrittenByFluxReason: kustomize-controller's apply, already under
	// way as the hold was taken, put Git's values back.
	OverwrittenByFluxReason = "OverwrittenByFlux"
	// OverwrittenByUpgradeReason: helm-controller upgraded the release,
	// which applies the whole chart over a hold (docs/flux-behaviour.md).
	OverwrittenByUpgradeReason = "OverwrittenByUpgrade"
)

// Reasons for the HoldExpired condition.
const (
	// HoldKeptReason: the hold expired and is kept (onExpiry: Alert).
	HoldKeptReason = "HoldKept"
	// HoldReleasedReason: the hold expired and was released so that Flux
	// restores Git (onExpiry: Release).
	HoldReleasedReason = "HoldReleased"
	// HoldReleasePendingReason: the hold expired and the record closed as
	// Expired, but the release has not happened yet (it is under way, or
	// failed and is retried); status.heldSince stays until it does.
	HoldReleasePendingReason = "ReleasePending"
)

// Reasons for ReverseSyncPolicy conditions.
const (
	// ValidPolicyReason means the policy passed every check.
	ValidPolicyReason = "Valid"

	// InvalidPolicyReason means the policy cannot be used as written; it is
	// Stalled until its spec changes.
	InvalidPolicyReason = "InvalidPolicy"

	// SigningKeyNotFoundReason means the referenced signing Secret is
	// missing or lacks the key for the configured type.
	SigningKeyNotFoundReason = "SigningKeyNotFound"

	// BranchPrefixConflictReason means the branch prefix could name, or
	// collide with, the source branch of a governed Kustomization.
	BranchPrefixConflictReason = "BranchPrefixConflict"

	// SuspendedReason means the policy is suspended.
	SuspendedReason = "Suspended"

	// TokenNotFoundReason means the pull-request token Secret is missing
	// or has no `token` key.
	TokenNotFoundReason = "TokenNotFound"

	// ForgeUnreachableReason means the forge's API could not be reached,
	// or refused the token or the repository; the answer is in the
	// message.
	ForgeUnreachableReason = "ForgeUnreachable"

	// TokenReadOnlyReason means the forge lets the pull-request token read
	// the repository but not write its pull requests: the token's user
	// may only read it, or the token's scopes allow only reads. On a
	// policy, the forge said so when asked (Gitea, GitHub); on
	// ReverseSynced, it refused a write with 403 and the branch is still
	// pushed. A new token, or write access for its user, cures it.
	TokenReadOnlyReason = "TokenReadOnly"
)

// Reasons for the Drifted condition.
const (
	// DriftDetectedReason means at least one live field diverges.
	DriftDetectedReason = "DriftDetected"
	// NoDriftReason means the live objects match the applied revision.
	NoDriftReason = "NoDrift"
	// ArtifactUnavailableReason means the source artifact could not be
	// fetched, so no drift can be computed (and none is reported). On a
	// HelmRelease's ReverseDrifted, it means helm-controller has no chart
	// artifact to upgrade from (its Ready condition is False with
	// ArtifactFailed or SourceNotReady), so it upgrades nothing; drift is
	// still computed, from the release it last made, whose chart Helm's
	// storage keeps, and changes are held and recorded.
	ArtifactUnavailableReason = "ArtifactUnavailable"
	// KustomizationNotReadyReason means Flux has not applied a revision
	// successfully, so nothing is compared.
	KustomizationNotReadyReason = "KustomizationNotReady"
	// RenderingReason means the applied revision is being rendered, or the
	// live objects checked against it; live changes that arrive meanwhile
	// are kept (and, where Flux would revert them, held) until it is done.
	// It is Flux's own Progressing reason, set only once the work takes
	// longer than reflux's slow-render threshold.
	RenderingReason = "Progressing"
	// RenderFailedReason means the applied revision could not be rendered;
	// live changes are kept until a render succeeds.
	RenderFailedReason = "RenderFailed"
	// RemoteClusterUnsupportedReason means Flux applies the Kustomization
	// to another cluster through a spec.kubeConfig reflux cannot follow
	// (one naming neither a Secret nor a ConfigMap): nothing of it is
	// watched, dry-run, held or recorded, so drift in that cluster goes
	// undetected. The Warning event emitted when a Kustomization comes to
	// this carries the same reason.
	RemoteClusterUnsupportedReason = "RemoteClusterUnsupported"

	// ClusterUnreachableReason means Flux applies the Kustomization to a
	// remote cluster (spec.kubeConfig) that reflux cannot reach: its
	// kubeconfig Secret or workload identity ConfigMap cannot be read or
	// used, or the cluster does not answer. Holds stay where they are,
	// and what changed meanwhile is found when it answers again.
	ClusterUnreachableReason = "ClusterUnreachable"
)

// Reasons for the ReverseSynced condition.
const (
	// BranchPushedReason means a branch with the drift was pushed.
	BranchPushedReason = "BranchPushed"
	// UpToDateReason means the branch already holds this drift set.
	UpToDateReason = "UpToDate"
	// ConflictReason means Git changed the same field, or the edit no
	// longer applies; the drift is kept for the next attempt.
	ConflictReason = "Conflict"
	// RefusedReason means reflux will not write this drift (for example a
	// Secret value without SOPS recipients, or a verification failure).
	RefusedReason = "Refused"
	// GitErrorReason means the git server failed or rejected the push.
	GitErrorReason = "GitError"
	// ReportOnlyReason means the policy never writes Git.
	ReportOnlyReason = "ReportOnly"
	// PullRequestFailedReason means the branch was pushed but the forge
	// refused or failed to open or update its pull request; the forge's
	// answer is in the message.
	PullRequestFailedReason = "PullRequestFailed"
	// TokenReadOnlyReason (above) is a ReverseSynced reason too: the
	// branch was pushed but the forge refused the token a write of its
	// pull request (403) after letting it read.
	// WithdrawnReason means a branch reflux had pushed no longer carries
	// the record's change: the branch was closed because nothing open is
	// left on it, or the change is already in the source branch.
	WithdrawnReason = "Withdrawn"
)
