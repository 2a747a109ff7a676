package writeback

// Outcome is how a write-back ended. The values double as condition
// reasons.
type Outcome string

const (
	// BranchPushed means a new commit is on the remote fix branch.
	BranchPushed Outcome = "BranchPushed"
	// UpToDate means nothing needed pushing: the branch already proposes
	// the open drift, or, with no branch, the source branch already has
	// it.
	UpToDate Outcome = "UpToDate"
	// Obsolete means reflux's open branch proposes nothing the source
	// branch does not already have: the drift was written back another
	// way, or every record of it was closed. Nothing was pushed or
	// deleted; the caller closes the branch's pull request, then deletes
	// the branch with DeleteClosed leased on Result.Commit.
	Obsolete Outcome = "Obsolete"
	// Superseded means the drift set changed while it was being written
	// (BeforePush answered ErrSuperseded); nothing was pushed, and the
	// caller writes the new set at once.
	Superseded Outcome = "Superseded"
	// Conflict means Apply could not make the change on the current head;
	// nothing was pushed.
	Conflict Outcome = "Conflict"
	// Refused means the write would touch a branch reflux does not own.
	Refused Outcome = "Refused"
	// GitError means the server could not be reached or rejected the
	// push; nothing was lost and the run can be retried.
	GitError Outcome = "GitError"
)

// Result reports a write-back.
type Result struct {
	// Branch is the fix branch, when one was chosen.
	Branch string
	// Commit is the head of Branch after the run (for Obsolete, the head
	// to delete).
	Commit string
	// Base is the source branch commit the change was made on: the
	// source head, or, on a branch a human committed to, the branch's
	// merge base with the source.
	Base string
	// Outcome says how the run ended.
	Outcome Outcome
	// Reason explains the outcome for humans (events, conditions).
	Reason string
}
