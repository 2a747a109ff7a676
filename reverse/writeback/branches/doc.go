// Package branches turns a Kustomization's drift set into reviewable
// branches: Merge fields into one branch, Alert fields into a separate
// prefilled branch that needs a decision. It edits the source tree with
// kustomize/edit (verified by re-rendering) and leaves clone, commit,
// signing and push to reverse/writeback. Check follows what reviewers did
// with the branches: merged ones are deleted, and a pushed branch gone
// unmerged was closed.
package branches
