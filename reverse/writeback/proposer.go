package writeback

import "context"

// Proposal describes a pushed fix branch to open or refresh a change
// request (pull request, merge request) for.
type Proposal struct {
	RepoURL       string
	SourceBranch  string
	Branch        string
	Commit        string
	Kustomization Kustomization
	// Title and Body come from the commit message.
	Title, Body string
	// NeedsDecision marks Alert-kind changes; providers should label them
	// and never enable auto-merge.
	NeedsDecision bool
}

// Proposer is the seam for opening change requests through a provider API
// (GitHub, GitLab, ...). Propose must be idempotent: the engine calls it
// after every push and whenever a run finds its branch up to date, so a
// restart recreates a missing pull request.
type Proposer interface {
	Propose(ctx context.Context, p Proposal) error
}
