package v1alpha1

// Reasons of the events reflux records on a Kustomization, which Flux's
// notification-controller routes: an Alert's eventSources and
// inclusionList match on them. BranchPushed and the other write-back
// outcomes use the ReverseSynced reasons; a Kustomization reflux will not
// govern (RemoteClusterUnsupported) uses the Drifted reason.
const (
	// DriftDetectedEventReason is emitted for every new or changed record.
	DriftDetectedEventReason = "DriftDetected"
	// ManualHotfixEventReason is a Normal event for a declared hotfix.
	ManualHotfixEventReason = "ManualHotfix"
	// DriftResolvedEventReason is emitted when a record resolves.
	DriftResolvedEventReason = "DriftResolved"
	// DriftDismissedEventReason is emitted when a record is dismissed.
	DriftDismissedEventReason = "DriftDismissed"
	// BranchDeletedEventReason is emitted when reflux deletes a branch
	// whose pull request a reviewer closed without merging.
	BranchDeletedEventReason = "BranchDeleted"
	// HoldExpiredEventReason is the Warning event of a hold that reached
	// its maximum age. Its message starts with CriticalPrefix and its
	// severity metadata is critical, so an Alert pages on it the way it
	// pages on critical drift.
	HoldExpiredEventReason = "HoldExpired"
	// LiveChangeLostEventReason is the Warning event of a held live change
	// Flux undid over its hold (LostLiveCondition): the record keeps the
	// evidence, and someone should know the change is gone.
	LiveChangeLostEventReason = "LiveChangeLost"
	// RecordNotSealedEventReason: a Drift record reflux did not write was
	// found and deleted.
	RecordNotSealedEventReason = "RecordNotSealed"
)

// CriticalPrefix starts the message of a critical drift event, so a
// notification-controller Alert can page on it with
// `inclusionList: ["^critical: "]`.
const CriticalPrefix = "critical: "
