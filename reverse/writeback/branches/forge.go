package branches

import (
	"context"
	"errors"
	"fmt"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

// Forge opens and follows the pull requests of reflux's branches
// (reverse/forge.Client).
type Forge interface {
	Ensure(ctx context.Context, req forge.Request) (forge.Result, error)
	Find(ctx context.Context, head string) (forge.PullRequest, bool, error)
	// Close comments on the open pull request of head and closes it.
	Close(ctx context.Context, head, comment string) (forge.PullRequest, error)
	// Comment comments on pull request number.
	Comment(ctx context.Context, number int, body string) error
}

var _ Forge = &forge.Client{}

// connect returns the forge of the set's policy, or nil when the policy
// opens no pull requests.
func (h *Writer) connect(ctx context.Context, set reverse.DriftSet) (Forge, error) {
	spec := set.Policy.Spec.Git.PullRequest
	if spec == nil || set.Source == nil {
		return nil, nil
	}
	opts := forge.Options{Provider: string(spec.Provider), Token: set.ForgeToken, APIURL: spec.APIURL,
		RepoURL: set.Source.URL, Base: set.Source.Branch}
	if h.Forges != nil {
		return h.Forges(ctx, opts)
	}
	c, err := forge.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// openPullRequest makes sure the pushed branch of p has its pull request.
// A forge that refused the token is a configuration problem: the branch
// stays pushed, the outcome says what the forge answered, and nothing is
// retried until the next write or branch check. Any other failure (the
// forge is down) is returned so the run backs off and retries.
func (h *Writer) openPullRequest(ctx context.Context, f Forge, set reverse.DriftSet, grp group, p *reverse.BranchResult) error {
	res, err := f.Ensure(ctx, pullRequest(set, grp, p.Branch, p.Commit))
	if res.URL != "" {
		p.PullRequest, p.PullRequestState = res.URL, string(res.State)
	}
	if err == nil {
		verb := "is open"
		switch {
		case res.Created:
			verb = "opened"
		case res.Updated:
			verb = "updated"
		case res.State != forge.Open:
			verb = "is " + string(res.State)
		}
		p.Reason = joinReasons(p.Reason, fmt.Sprintf("pull request %s %s", res.URL, verb))
		return nil
	}
	p.Outcome = forgeOutcome(err)
	p.Reason = joinReasons(p.Reason, err.Error())
	if forge.Unauthorized(err) {
		return nil
	}
	return fmt.Errorf("%w: %w", errForge, err)
}

// openMissing opens the pull request of a pushed branch that has none,
// from the open records that name the branch. A branch no open record
// names (its drift resolved meanwhile) gets none.
func (h *Writer) openMissing(ctx context.Context, f Forge, set reverse.DriftSet, name, commit string,
	action refluxv1.Action) (forge.PullRequest, error) {
	var recs []refluxv1.Drift
	for _, r := range set.Records {
		if r.Status.Branch == name {
			recs = append(recs, r)
		}
	}
	for _, grp := range split(recs, true, writesOf(set.Policy.Spec.Git)) {
		if grp.action != action || len(grp.fields) == 0 {
			continue
		}
		res, err := f.Ensure(ctx, pullRequest(set, grp, name, commit))
		if forge.Unauthorized(err) {
			return forge.PullRequest{}, nil // write-back reports the refusal
		}
		if err != nil {
			return forge.PullRequest{}, fmt.Errorf("%w: %w", errForge, err)
		}
		return res.PullRequest, nil
	}
	return forge.PullRequest{}, nil
}

// forgeOutcome names a forge's failure for ReverseSynced: TokenReadOnly
// when it let the token read but refused it a write (issue 22 §3: a named
// condition, not one more failed pull request), else PullRequestFailed.
func forgeOutcome(err error) string {
	if forge.ReadOnly(err) {
		return refluxv1.TokenReadOnlyReason
	}
	return refluxv1.PullRequestFailedReason
}

// errForge marks a forge failure that a retry may cure.
var errForge = errors.New("pull request")
