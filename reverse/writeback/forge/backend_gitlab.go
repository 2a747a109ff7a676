package forge

import (
	"context"
	"fmt"
	"strings"

	ggpgitlab "github.com/fluxcd/go-git-providers/gitlab"
	"github.com/fluxcd/go-git-providers/gitprovider"
	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// gitlabDraft is the title prefix GitLab reads as a draft merge request.
const gitlabDraft = "Draft: "

type gitlabBackend struct {
	providerRepo
	raw *gitlab.Client
	// pid is the project path, group/subgroup/name.
	pid string
}

// newGitLab connects with a personal, group or project access token
// (go-git-providers' "private" token type) to gitlab.com or opts.APIURL.
func newGitLab(opts Options, owner, repo string, copts []gitprovider.ClientOption) (backend, error) {
	if opts.APIURL != "" {
		copts = append(copts, gitprovider.WithDomain(strings.TrimSuffix(opts.APIURL, "/")))
	}
	c, err := ggpgitlab.NewClient(opts.Token, "", copts...)
	if err != nil {
		return nil, err
	}
	raw, ok := c.Raw().(*gitlab.Client)
	if !ok {
		return nil, fmt.Errorf("go-git-providers' gitlab client is a %T", c.Raw())
	}
	return &gitlabBackend{raw: raw, pid: owner + "/" + repo, providerRepo: providerRepo{ggp: c, ref: gitprovider.OrgRepositoryRef{
		OrganizationRef: gitprovider.OrganizationRef{Domain: c.SupportedDomain(), Organization: owner}, RepositoryName: repo,
	}}}, nil
}

func (g *gitlabBackend) title(req Request) string {
	if req.Draft {
		return gitlabDraft + req.Title
	}
	return req.Title
}

func (g *gitlabBackend) find(ctx context.Context, head, _ string) (*PullRequest, error) {
	mrs, _, err := g.raw.MergeRequests.ListProjectMergeRequests(g.pid, &gitlab.ListProjectMergeRequestsOptions{
		SourceBranch: gitlab.Ptr(head), State: gitlab.Ptr("all"), ListOptions: gitlab.ListOptions{PerPage: 100},
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	var best *gitlab.BasicMergeRequest
	for _, mr := range mrs {
		if mr.SourceBranch == head && (best == nil || mr.IID > best.IID) {
			best = mr
		}
	}
	if best == nil {
		return nil, nil
	}
	out := &PullRequest{Number: int(best.IID), URL: best.WebURL, Title: best.Title, Body: best.Description,
		Labels: best.Labels, State: Open, HeadCommit: best.SHA}
	switch best.State {
	case "merged":
		out.State = Merged
	case "closed":
		out.State = Closed
	}
	return out, nil
}

func (g *gitlabBackend) create(ctx context.Context, req Request) (*PullRequest, error) {
	return g.open(ctx, g.title(req), req.Head, req.Base, req.Body)
}

func (g *gitlabBackend) update(ctx context.Context, number int, title, body string) error {
	_, _, err := g.raw.MergeRequests.UpdateMergeRequest(g.pid, int64(number),
		&gitlab.UpdateMergeRequestOptions{Title: &title, Description: &body}, gitlab.WithContext(ctx))
	return err
}

func (g *gitlabBackend) decorate(ctx context.Context, number int, req Request) error {
	opt := &gitlab.UpdateMergeRequestOptions{}
	if len(req.Labels) > 0 {
		labels := gitlab.LabelOptions(req.Labels)
		opt.AddLabels = &labels
	}
	// GitLab takes user ids: resolve the names first.
	if len(req.Reviewers) > 0 {
		ids, err := g.userIDs(ctx, req.Reviewers)
		if err != nil {
			return fmt.Errorf("requesting reviews of %v: %w", req.Reviewers, err)
		}
		opt.ReviewerIDs = &ids
	}
	if len(req.Assignees) > 0 {
		ids, err := g.userIDs(ctx, req.Assignees)
		if err != nil {
			return fmt.Errorf("assigning %v: %w", req.Assignees, err)
		}
		opt.AssigneeIDs = &ids
	}
	_, _, err := g.raw.MergeRequests.UpdateMergeRequest(g.pid, int64(number), opt, gitlab.WithContext(ctx))
	return err
}

// unlabel needs no check of the labels: GitLab ignores removing one the
// merge request no longer carries.
func (g *gitlabBackend) unlabel(ctx context.Context, number int, labels []string) error {
	remove := gitlab.LabelOptions(labels)
	_, _, err := g.raw.MergeRequests.UpdateMergeRequest(g.pid, int64(number),
		&gitlab.UpdateMergeRequestOptions{RemoveLabels: &remove}, gitlab.WithContext(ctx))
	return err
}

func (g *gitlabBackend) comment(ctx context.Context, number int, body string) error {
	_, _, err := g.raw.Notes.CreateMergeRequestNote(g.pid, int64(number),
		&gitlab.CreateMergeRequestNoteOptions{Body: &body}, gitlab.WithContext(ctx))
	return err
}

func (g *gitlabBackend) close(ctx context.Context, number int) error {
	_, _, err := g.raw.MergeRequests.UpdateMergeRequest(g.pid, int64(number),
		&gitlab.UpdateMergeRequestOptions{StateEvent: gitlab.Ptr("close")}, gitlab.WithContext(ctx))
	return err
}

func (g *gitlabBackend) userIDs(ctx context.Context, names []string) ([]int64, error) {
	ids := make([]int64, 0, len(names))
	for _, n := range names {
		users, _, err := g.raw.Users.ListUsers(&gitlab.ListUsersOptions{Username: gitlab.Ptr(n)}, gitlab.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		if len(users) == 0 {
			return nil, fmt.Errorf("no GitLab user %q", n)
		}
		ids = append(ids, users[0].ID)
	}
	return ids, nil
}
