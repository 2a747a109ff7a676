package reverse

import (
	"context"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/record"
)

// DriftSet is the open drift of one governed Kustomization, as handed to
// write-back whenever it changes. It carries everything write-back needs,
// Secrets' data included, so reverse/ never reads the cluster itself.
type DriftSet struct {
	// Kustomization the records belong to.
	Kustomization refluxv1.KustomizationRef
	// Spec is the Flux Kustomization itself: its spec says how the source
	// tree renders, which is how edits are verified.
	Spec *kustomizev1.Kustomization
	// Source is the Git repository to write to; nil when the Kustomization's
	// source is not a GitRepository.
	Source *GitSource
	// SigningKey is the policy's signing Secret data; nil for unsigned.
	SigningKey map[string][]byte
	// ForgeToken is the `token` of the policy's pull-request Secret; empty
	// when the policy opens no pull requests.
	ForgeToken string
	// LiveSecrets holds the data of the held live Secrets the records name,
	// by "namespace/name": records mask Secret values, so the values to
	// encrypt come from the held object itself.
	LiveSecrets map[string]map[string][]byte
	// Policy that governs the Kustomization.
	Policy *refluxv1.ReverseSyncPolicy
	// Revision Flux applied when the set was computed.
	Revision string
	// Render is the applied revision's render, when current: write-back
	// reuses it as the state before its edits. Nil makes write-back render.
	Render *desired.Render
	// SubstituteFrom is the Kustomization's resolved postBuild
	// substitution data, so write-back renders as Flux does.
	SubstituteFrom []kustomize.SubstituteSource
	// Records are the open (not Resolved or Dismissed) drift records.
	Records []refluxv1.Drift
	// Closed are closed records that still name a branch: what a retired
	// branch's pull request says was dismissed or resolved, and by whom.
	Closed []refluxv1.Drift
	// Fingerprint identifies the set; see Fingerprint.
	Fingerprint string
	// Intent, when set, is called before every push with the branch it
	// goes to (the write intent recorded on the records). It returns an
	// error wrapping writeback.ErrSuperseded when a record closed since
	// the set was read: nothing is pushed, and the new set is written.
	Intent IntentFunc
	// Withdraw, when set, is called before reflux closes a branch's pull
	// request and deletes the branch, with the open records that name it:
	// they are taken off it first, so that no open record names a branch
	// reflux deleted, which would read as a reviewer's rejection. Its
	// second argument, in place of a fingerprint, says why the branch is
	// closed when it is not that it proposes nothing open.
	Withdraw IntentFunc
}

// GitSource is where a Kustomization's source lives.
type GitSource struct {
	// URL of the repository.
	URL string
	// Branch Flux applies from; reflux never writes to it.
	Branch string
	// AuthData is the GitRepository's Secret data, in Flux's format.
	AuthData map[string][]byte
}

// BranchResult is the outcome of writing one branch for a drift set.
type BranchResult struct {
	// Action is Merge or Alert: which fields the branch carries.
	Action refluxv1.Action
	// Branch and Commit name what was pushed (or found up to date).
	Branch, Commit string
	// Fingerprint identifies the fields the branch carries.
	Fingerprint string
	// Outcome is a reason such as BranchPushed, UpToDate, Conflict,
	// Refused, GitError or ReportOnly.
	Outcome string
	// Reason explains the outcome.
	Reason string
	// PullRequest is the URL of the branch's pull request, when the policy
	// opens them and the forge answered.
	PullRequest string
	// PullRequestState is open, merged or closed, as the forge said.
	PullRequestState string
	// Records are the names of the records whose change the branch
	// carries; for an outcome that wrote nothing (Conflict, GitError), the
	// records it was written for.
	Records []string
	// NotWritten are the records none of whose fields could be written on
	// this branch, with why: no branch carries their change.
	NotWritten map[string]string
}

// ClosedRecord is an open record a reviewer closed by closing its branch.
type ClosedRecord struct {
	// Name of the record.
	Name string
	// Reason is refluxv1.ClosedBranchDeletedReason or
	// ClosedPullRequestClosedReason.
	Reason string
	// Message says what the reviewer did, naming the branch or pull
	// request.
	Message string
}

// IntentFunc records, before a push, that branch is about to carry the
// drift set fingerprint of records.
type IntentFunc func(ctx context.Context, branch, fingerprint string, records []string) error

// BranchCheck is what became of a Kustomization's reflux branches.
type BranchCheck struct {
	// Pending are the branches that exist and are not merged.
	Pending []BranchResult
	// Closed are the records whose pushed branch is gone unmerged, or
	// whose pull request a reviewer closed.
	Closed []ClosedRecord
	// Deleted are merged branches reflux deleted.
	Deleted []string
	// PullRequests are the branches whose pull request a reviewer merged
	// or closed, as the forge reported them.
	PullRequests []BranchResult
	// DeletedClosed are the branches whose pull request a reviewer closed
	// unmerged, which reflux deleted so that the Kustomization's next
	// drift opens a fresh branch and pull request.
	DeletedClosed []BranchResult
	// Retired are unmerged branches no open record was on: reflux closed
	// their pull requests and deleted them, or, on a branch a human
	// committed to, took its own edits out.
	Retired []BranchResult
}

// Fingerprint returns a short, stable identifier of what a set of records
// asks Git to change: each field's object, pointer, change, live value and
// action, leaving out Ignore fields, which never reach Git. It is "" when
// no field is bound for Git (record.FingerprintOf).
func Fingerprint(records []refluxv1.Drift) string {
	return record.FingerprintOf(records, func(f refluxv1.DriftField) bool { return f.Action != refluxv1.IgnoreAction })
}
