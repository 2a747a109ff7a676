package branches

import (
	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// proposals says where the open records on branch head were proposed:
// the pull request each was recorded with and the commit reflux pushed
// it at. A closed pull request that proposed one of them decided them,
// whatever was pushed to head after the close (issue 22 §3).
func proposals(records []refluxv1.Drift, head string) []forge.Proposal {
	var out []forge.Proposal
	for _, r := range records {
		if r.Status.Branch == head && (r.Status.PullRequest != "" || r.Status.Commit != "") {
			out = append(out, proposalOf(r))
		}
	}
	return out
}

func proposalOf(r refluxv1.Drift) forge.Proposal {
	return forge.Proposal{PullRequest: r.Status.PullRequest, Commit: r.Status.Commit}
}

// closedFor reports whether pr is a pull request a reviewer closed with
// rec in it. A closed pull request that did not propose rec (it joined
// the branch after the close) leaves it to be written again; one whose
// forge names no head commit is taken as proposing every record on its
// branch, as before commits were compared.
func closedFor(pr forge.PullRequest, rec refluxv1.Drift) bool {
	return pr.State == forge.Closed && (pr.HeadCommit == "" || pr.Proposed(proposalOf(rec)))
}

// unproposed names the open records on head that pr, closed, did not
// propose: they joined the branch after the reviewer closed it.
func unproposed(records []refluxv1.Drift, head string, pr forge.PullRequest) []string {
	var out []string
	for _, r := range records {
		if r.Status.Branch == head && !closedFor(pr, r) {
			out = append(out, r.Name)
		}
	}
	return out
}
