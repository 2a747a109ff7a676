// Package writeback is reflux's Git write-back engine: it turns a detected
// drift into a signed, reviewable commit on a fix branch of the source
// repository. It heads the write-back wing, whose packages run from when
// to write down to the bytes on the wire:
//
//   - scheduler: when a Kustomization's open drift is written, one worker
//     per repository, off the live path;
//   - branches: what each branch carries (a drift set's Merge and Alert
//     fields), edited at their origins, and its pull request;
//   - forge: pull requests on GitHub, GitLab and Gitea, the one forge
//     interface (branches.Forge) over them;
//   - this package: the Git side of one branch (clone, rebuild, commit,
//     sign, push), with branch naming (branch), commit messages (message),
//     signing (signing), SOPS (sops) and the git client (git, behind
//     git/repository's interface, implemented by git/gogit).
//
// The caller (branches.Writer) describes the change in a Request and
// edits files in an Apply callback; the engine owns everything
// Git: a cached clone per repository URL refreshed by fetch, one writer per
// repository at a time, branch naming, the commit message and trailers,
// signing, and pushing with a lease so that a commit reflux did not author
// is never overwritten.
//
// Remote branches are the only truth. After a restart the engine finds its
// open branch for a Kustomization by listing the remote under the branch
// family (see package branch) and reading the Reflux-* trailers of the
// commits on it; it keeps no state in memory between runs. One open branch
// per Kustomization and kind, and it proposes exactly the drift that is
// still open, no more and no less:
//   - No open branch: Apply runs on the source head and a new branch,
//     named by the fingerprint, starts there.
//   - An open branch only reflux wrote is rebuilt: Apply runs on the
//     source head and the result replaces the branch (a push with force,
//     leased on the head reflux saw). A rebuild with the same tree as the
//     branch pushes nothing, so an unchanged set never churns it.
//   - An open branch a human committed to is never rewritten: one reflux
//     commit goes on top, whose tree is the branch's merge base with the
//     source, plus Apply's edits, plus the humans' commits replayed as text
//     patches. reflux's own earlier commits are not replayed, which takes
//     the edits of closed records out while the humans' work stays.
//
// Apply therefore always runs on a source commit, never on top of reflux's
// own commits, and writes the whole open set. An Apply that changes
// nothing takes everything out of the branch.
//
// Ownership: a commit is reflux's when it carries the Reflux-Fingerprint
// trailer and reflux's committer email. A clean merge of the source into
// the branch (a provider's "update branch" button) counts as reflux's;
// any other commit is a human's.
//
// Outcomes:
//   - BranchPushed: a new commit is on the remote branch.
//   - UpToDate: the branch already proposes the open drift, or, with no
//     branch, the source branch already has it.
//   - Obsolete: reflux's open branch proposes nothing the source does not
//     have; the caller closes its pull request and deletes it with
//     DeleteClosed.
//   - Superseded: the caller's BeforePush said the drift set changed
//     meanwhile; nothing was pushed.
//   - Conflict: Apply failed on its base, e.g. the same field was changed
//     in Git, or a human's commit cannot be replayed; nothing was pushed.
//   - Refused: the request would touch a branch reflux does not own, such
//     as the source branch or a branch with no history in common with it.
//   - GitError: the server was unreachable or rejected the push; nothing
//     was lost and the run can be retried.
package writeback
