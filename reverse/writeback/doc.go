// Package writeback is reflux's Git write-back engine: it turns a detected
// drift into a signed, reviewable commit on a fix branch of the source
// repository.
//
// The caller (the reverse-sync controller) describes the change in a
// Request and edits files in an Apply callback; the engine owns everything
// Git: a cached clone per repository URL refreshed by fetch, one writer per
// repository at a time, branch naming, the commit message and trailers,
// signing, rebasing by re-running Apply when the source branch moved, and
// pushing with a lease so that a commit reflux did not author is never
// overwritten.
//
// Remote branches are the only truth. After a restart the engine finds its
// open branch for a Kustomization by listing the remote under the branch
// family (see package branch) and reading the Reflux-* trailers of the
// commits on it; it keeps no state in memory between runs. One open branch
// per Kustomization and kind: a new drift set adds a commit on top of it,
// and only once it is merged or deleted does a new branch start.
//
// Ownership: a commit is reflux's when it carries the Reflux-Fingerprint
// trailer and reflux's committer email. A clean merge of the source into
// the branch (a provider's "update branch" button) is tolerated; any other
// commit makes the branch the humans', and reflux answers Refused instead
// of pushing to it.
//
// Outcomes:
//   - BranchPushed: a new commit is on the remote branch.
//   - UpToDate: the branch (or the source branch) already has the change.
//   - Conflict: Apply failed on the current head, e.g. the same field was
//     changed in Git; nothing was pushed.
//   - Refused: the request would touch a branch reflux does not own, such
//     as the source branch or a branch a human has committed to.
//   - GitError: the server was unreachable or rejected the push; nothing
//     was lost and the run can be retried.
package writeback
