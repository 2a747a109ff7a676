package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	ggpgithub "github.com/fluxcd/go-git-providers/github"
	"github.com/fluxcd/go-git-providers/gitprovider"
	"github.com/google/go-github/v82/github"
)

type githubBackend struct {
	providerRepo
	raw         *github.Client
	owner, repo string
}

// newGitHub connects to github.com, or to GitHub Enterprise at the host
// of opts.APIURL (go-git-providers adds /api/v3/).
func newGitHub(opts Options, owner, repo string, copts []gitprovider.ClientOption) (backend, error) {
	copts = append(copts, gitprovider.WithOAuth2Token(opts.Token))
	if opts.APIURL != "" {
		u, err := url.Parse(opts.APIURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("API URL %q names no host", opts.APIURL)
		}
		copts = append(copts, gitprovider.WithDomain(u.Host))
	}
	c, err := ggpgithub.NewClient(copts...)
	if err != nil {
		return nil, err
	}
	raw, ok := c.Raw().(*github.Client)
	if !ok {
		return nil, fmt.Errorf("go-git-providers' github client is a %T", c.Raw())
	}
	return &githubBackend{raw: raw, owner: owner, repo: repo, providerRepo: providerRepo{ggp: c, ref: gitprovider.OrgRepositoryRef{
		OrganizationRef: gitprovider.OrganizationRef{Domain: c.SupportedDomain(), Organization: owner}, RepositoryName: repo,
	}}}, nil
}

// title: GitHub has a real draft flag, so the title is left alone.
func (g *githubBackend) title(req Request) string { return req.Title }

func (g *githubBackend) find(ctx context.Context, head, _ string) (*PullRequest, error) {
	// head=owner:branch filters server-side; reflux pushes to the
	// repository itself, never to a fork.
	prs, _, err := g.raw.PullRequests.List(ctx, g.owner, g.repo, &github.PullRequestListOptions{
		State: "all", Head: g.owner + ":" + head, ListOptions: github.ListOptions{PerPage: 100},
	})
	if err != nil {
		return nil, err
	}
	var best *github.PullRequest
	for _, pr := range prs {
		if pr.GetHead().GetRef() == head && (best == nil || pr.GetNumber() > best.GetNumber()) {
			best = pr
		}
	}
	if best == nil {
		return nil, nil
	}
	return githubPR(best), nil
}

func (g *githubBackend) create(ctx context.Context, req Request) (*PullRequest, error) {
	if req.Draft {
		// go-git-providers' Create has no draft flag: open Alert pull
		// requests as drafts with the GitHub client itself.
		pr, _, err := g.raw.PullRequests.Create(ctx, g.owner, g.repo, &github.NewPullRequest{
			Title: &req.Title, Head: &req.Head, Base: &req.Base, Body: &req.Body, Draft: github.Ptr(true),
		})
		if err != nil {
			return nil, err
		}
		return githubPR(pr), nil
	}
	return g.open(ctx, req.Title, req.Head, req.Base, req.Body)
}

// check reads the repository as the token's user sees it: GitHub's
// answer carries that user's role (admin, maintain, push, triage, pull).
// Triage is enough for what reflux does with the token (open, label, ask
// reviews of and close pull requests; the branch is pushed with the Git
// credentials), so only a user who may merely read is a ReadOnlyError
// here. A fine-grained token's own permissions are not in the answer:
// they show on the first write.
func (g *githubBackend) check(ctx context.Context) error {
	repo, _, err := g.raw.Repositories.Get(ctx, g.owner, g.repo)
	if err != nil {
		return err
	}
	if p := repo.Permissions; p != nil &&
		!p.GetAdmin() && !p.GetMaintain() && !p.GetPush() && !p.GetTriage() {
		return &ReadOnlyError{}
	}
	return nil
}

func (g *githubBackend) update(ctx context.Context, number int, title, body string) error {
	_, _, err := g.raw.PullRequests.Edit(ctx, g.owner, g.repo, number, &github.PullRequest{Title: &title, Body: &body})
	return err
}

// decorate labels last: labels on a pull request are how Client.relabel
// tells that its decoration finished, so a failure before them is done
// again, reviewers included.
func (g *githubBackend) decorate(ctx context.Context, number int, req Request) error {
	if len(req.Assignees) > 0 {
		if _, _, err := g.raw.Issues.AddAssignees(ctx, g.owner, g.repo, number, req.Assignees); err != nil {
			return fmt.Errorf("assigning %v: %w", req.Assignees, err)
		}
	}
	if len(req.Reviewers) > 0 {
		if _, _, err := g.raw.PullRequests.RequestReviewers(ctx, g.owner, g.repo, number,
			github.ReviewersRequest{Reviewers: req.Reviewers}); err != nil {
			return fmt.Errorf("requesting reviews of %v: %w", req.Reviewers, err)
		}
	}
	if len(req.Labels) > 0 {
		if _, _, err := g.raw.Issues.AddLabelsToIssue(ctx, g.owner, g.repo, number, req.Labels); err != nil {
			return err
		}
	}
	return nil
}

func (g *githubBackend) unlabel(ctx context.Context, number int, labels []string) error {
	for _, l := range labels {
		// GitHub answers 404 for a label the pull request no longer
		// carries: someone removed it since find read it.
		// go-github puts the name in the path as it is given: escaped, a
		// "/" (severity/high), "?" or "#" stays inside the name's segment,
		// as GitHub's own octokit sends it. Unescaped, a name the route
		// misreads would 404 and pass for already removed.
		if _, err := g.raw.Issues.RemoveLabelForIssue(ctx, g.owner, g.repo, number, url.PathEscape(l)); err != nil &&
			StatusCode(err) != http.StatusNotFound {
			return fmt.Errorf("removing label %q: %w", l, err)
		}
	}
	return nil
}

// comment posts on the pull request's issue: GitHub keeps a pull
// request's conversation there (review comments are for lines of code).
func (g *githubBackend) comment(ctx context.Context, number int, body string) error {
	_, _, err := g.raw.Issues.CreateComment(ctx, g.owner, g.repo, number, &github.IssueComment{Body: &body})
	return err
}

func (g *githubBackend) close(ctx context.Context, number int) error {
	_, _, err := g.raw.PullRequests.Edit(ctx, g.owner, g.repo, number, &github.PullRequest{State: github.Ptr("closed")})
	return err
}

func githubPR(pr *github.PullRequest) *PullRequest {
	out := &PullRequest{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), Title: pr.GetTitle(), Body: pr.GetBody(), State: Open,
		HeadCommit: pr.GetHead().GetSHA()}
	switch {
	// The list endpoint leaves `merged` out; merged_at is always there.
	case pr.GetMerged() || pr.MergedAt != nil:
		out.State = Merged
	case pr.GetState() == "closed":
		out.State = Closed
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}
