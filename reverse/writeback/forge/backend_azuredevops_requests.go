package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/core"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/git"
)

// azureFindLimit bounds the pull requests of one head read at once: a
// branch name carries its drift, so a head has a handful at most.
const azureFindLimit = 100

func (b *azureBackend) title(req Request) string { return req.Title }

// find lists the head's pull requests in every status and keeps the
// newest. The list cuts descriptions to 400 characters, so an open one is
// read again whole, or every pass would see a changed body.
func (b *azureBackend) find(ctx context.Context, head, _ string) (*PullRequest, error) {
	ref, all, top := "refs/heads/"+head, git.PullRequestStatusValues.All, azureFindLimit
	list, err := b.git.GetPullRequests(ctx, git.GetPullRequestsArgs{Project: &b.project, RepositoryId: &b.repo, Top: &top,
		SearchCriteria: &git.GitPullRequestSearchCriteria{SourceRefName: &ref, Status: &all}})
	if err != nil || list == nil {
		return nil, err
	}
	var newest *git.GitPullRequest
	for i, p := range *list {
		if p.PullRequestId != nil && p.SourceRefName != nil && *p.SourceRefName == ref &&
			(newest == nil || *p.PullRequestId > *newest.PullRequestId) {
			newest = &(*list)[i]
		}
	}
	if newest == nil {
		return nil, nil
	}
	pr := b.pullRequest(*newest)
	if pr.State != Open {
		return pr, nil
	}
	whole, err := b.get(ctx, pr.Number)
	if err != nil {
		return nil, err
	}
	return b.pullRequest(*whole), nil
}

func (b *azureBackend) get(ctx context.Context, number int) (*git.GitPullRequest, error) {
	return b.git.GetPullRequest(ctx, git.GetPullRequestArgs{Project: &b.project, RepositoryId: &b.repo, PullRequestId: &number})
}

// pullRequest reads what reflux needs of p: completed is merged,
// abandoned closed, and the last merge source commit the head's.
func (b *azureBackend) pullRequest(p git.GitPullRequest) *PullRequest {
	out := &PullRequest{State: Open, Title: deref(p.Title), Body: deref(p.Description)}
	if p.PullRequestId != nil {
		out.Number = *p.PullRequestId
		out.URL = b.org + "/" + url.PathEscape(b.project) + "/_git/" + url.PathEscape(b.repo) + "/pullrequest/" + strconv.Itoa(out.Number)
	}
	if p.Status != nil {
		switch *p.Status {
		case git.PullRequestStatusValues.Completed:
			out.State = Merged
		case git.PullRequestStatusValues.Abandoned:
			out.State = Closed
		}
	}
	if p.LastMergeSourceCommit != nil {
		out.HeadCommit = deref(p.LastMergeSourceCommit.CommitId)
	}
	if p.Labels != nil {
		for _, l := range *p.Labels {
			if l.Name != nil && (l.Active == nil || *l.Active) {
				out.Labels = append(out.Labels, *l.Name)
			}
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// create opens the pull request with its reviewers, as a draft when
// asked; decorate labels it.
func (b *azureBackend) create(ctx context.Context, req Request) (*PullRequest, error) {
	if err := identityIDs(req.Reviewers); err != nil {
		return nil, err
	}
	source, target := "refs/heads/"+req.Head, "refs/heads/"+req.Base
	reviewers := make([]git.IdentityRefWithVote, 0, len(req.Reviewers))
	for _, id := range req.Reviewers {
		reviewers = append(reviewers, git.IdentityRefWithVote{Id: &id})
	}
	in := &git.GitPullRequest{SourceRefName: &source, TargetRefName: &target, Title: &req.Title,
		Description: &req.Body, IsDraft: &req.Draft, Reviewers: &reviewers}
	out, err := b.git.CreatePullRequest(ctx, git.CreatePullRequestArgs{Project: &b.project, RepositoryId: &b.repo,
		GitPullRequestToCreate: in})
	if err != nil {
		return nil, err
	}
	return b.pullRequest(*out), nil
}

// identityIDs refuses reviewers Azure DevOps would not take: it names
// reviewers by identity id only.
func identityIDs(ids []string) error {
	for _, id := range ids {
		if _, err := uuid.Parse(id); err != nil {
			return fmt.Errorf("reviewer %q is no Azure DevOps identity id (a GUID)", id)
		}
	}
	return nil
}

// update sets the title and description only: a reviewer who published
// a draft keeps it published.
func (b *azureBackend) update(ctx context.Context, number int, title, body string) error {
	return b.patch(ctx, number, &git.GitPullRequest{Title: &title, Description: &body})
}

func (b *azureBackend) patch(ctx context.Context, number int, in *git.GitPullRequest) error {
	_, err := b.git.UpdatePullRequest(ctx, git.UpdatePullRequestArgs{Project: &b.project, RepositoryId: &b.repo,
		PullRequestId: &number, GitPullRequestToUpdate: in})
	return err
}

// decorate adds the reviewers the pull request lacks, then the labels.
// Reviewers already on it are never sent again: their votes stay theirs.
func (b *azureBackend) decorate(ctx context.Context, number int, req Request) error {
	if err := b.review(ctx, number, req.Reviewers); err != nil {
		return fmt.Errorf("requesting reviews of %v: %w", req.Reviewers, err)
	}
	for _, l := range req.Labels {
		_, err := b.git.CreatePullRequestLabel(ctx, git.CreatePullRequestLabelArgs{Project: &b.project, RepositoryId: &b.repo,
			PullRequestId: &number, Label: &core.WebApiCreateTagRequestData{Name: &l}})
		if err != nil {
			return fmt.Errorf("adding label %q: %w", l, err)
		}
	}
	return nil
}

func (b *azureBackend) review(ctx context.Context, number int, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := identityIDs(ids); err != nil {
		return err
	}
	p, err := b.get(ctx, number)
	if err != nil {
		return err
	}
	var missing []string
	for _, id := range ids {
		if !hasReviewer(p.Reviewers, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = b.git.CreatePullRequestReviewers(ctx, git.CreatePullRequestReviewersArgs{Project: &b.project,
		RepositoryId: &b.repo, PullRequestId: &number, Reviewers: identities(missing)})
	return err
}

func hasReviewer(have *[]git.IdentityRefWithVote, id string) bool {
	if have == nil {
		return false
	}
	for _, r := range *have {
		if r.Id != nil && strings.EqualFold(*r.Id, id) {
			return true
		}
	}
	return false
}

// unlabel removes labels by id: a name such as severity/high would put
// an escaped slash in the path.
func (b *azureBackend) unlabel(ctx context.Context, number int, labels []string) error {
	have, err := b.git.GetPullRequestLabels(ctx, git.GetPullRequestLabelsArgs{Project: &b.project, RepositoryId: &b.repo,
		PullRequestId: &number})
	if err != nil || have == nil {
		return err
	}
	for _, l := range *have {
		if l.Id == nil || l.Name == nil || !containsFold(labels, *l.Name) {
			continue
		}
		id := l.Id.String()
		err := b.git.DeletePullRequestLabels(ctx, git.DeletePullRequestLabelsArgs{Project: &b.project, RepositoryId: &b.repo,
			PullRequestId: &number, LabelIdOrName: &id})
		if err != nil && azureStatus(err) != http.StatusNotFound {
			return fmt.Errorf("removing label %q: %w", *l.Name, err)
		}
	}
	return nil
}

// containsFold: Azure DevOps matches label names without case.
func containsFold(list []string, s string) bool {
	for _, l := range list {
		if strings.EqualFold(l, s) {
			return true
		}
	}
	return false
}

// comment starts a thread with no status: a note, not an active thread
// a comment-resolution policy would wait on.
func (b *azureBackend) comment(ctx context.Context, number int, body string) error {
	text := git.CommentTypeValues.Text
	thread := &git.GitPullRequestCommentThread{Comments: &[]git.Comment{{Content: &body, CommentType: &text}}}
	_, err := b.git.CreateThread(ctx, git.CreateThreadArgs{Project: &b.project, RepositoryId: &b.repo,
		PullRequestId: &number, CommentThread: thread})
	return err
}

// close abandons the pull request, Azure DevOps' close without merge.
func (b *azureBackend) close(ctx context.Context, number int) error {
	abandoned := git.PullRequestStatusValues.Abandoned
	return b.patch(ctx, number, &git.GitPullRequest{Status: &abandoned})
}

// check reads the repository.
func (b *azureBackend) check(ctx context.Context) error {
	_, err := b.git.GetRepository(ctx, git.GetRepositoryArgs{Project: &b.project, RepositoryId: &b.repo})
	return err
}
