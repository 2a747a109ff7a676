package writeback

// Outcome is how a write-back ended. The values double as condition
// reasons.
type Outcome string

const (
	// BranchPushed means a new commit is on the remote fix branch.
	BranchPushed Outcome = "BranchPushed"
	// UpToDate means nothing needed pushing: the branch, or the source
	// branch itself, already has the change.
	UpToDate Outcome = "UpToDate"
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
	// Commit is the head of Branch after the run.
	Commit string
	// Base is the source branch commit the change was made on.
	Base string
	// Outcome says how the run ended.
	Outcome Outcome
	// Reason explains the outcome for humans (events, conditions).
	Reason string
}
