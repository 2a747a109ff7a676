package forge

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	sdk "code.gitea.io/sdk/gitea"
	ggpgitea "github.com/fluxcd/go-git-providers/gitea"
	"github.com/fluxcd/go-git-providers/gitprovider"
)

// giteaDraft is the title prefix Gitea reads as a work-in-progress (draft)
// pull request: Gitea's API has no draft flag.
const giteaDraft = "WIP: "

// maxPages bounds the walk over a repository's pull requests or labels
// where a provider cannot filter them.
const maxPages = 20

type giteaBackend struct {
	providerRepo
	raw         *sdk.Client
	owner, repo string
}

func newGitea(opts Options, owner, repo string, copts []gitprovider.ClientOption) (backend, error) {
	if opts.APIURL == "" {
		return nil, fmt.Errorf("gitea needs an API URL")
	}
	domain := strings.TrimSuffix(opts.APIURL, "/")
	c, err := ggpgitea.NewClient(opts.Token, append(copts, gitprovider.WithDomain(domain))...)
	if err != nil {
		return nil, err
	}
	raw, ok := c.Raw().(*sdk.Client)
	if !ok {
		return nil, fmt.Errorf("go-git-providers' gitea client is a %T", c.Raw())
	}
	return &giteaBackend{raw: raw, owner: owner, repo: repo, providerRepo: providerRepo{ggp: c, ref: gitprovider.OrgRepositoryRef{
		OrganizationRef: gitprovider.OrganizationRef{Domain: domain, Organization: owner}, RepositoryName: repo,
	}}}, nil
}

func (g *giteaBackend) title(req Request) string {
	if req.Draft {
		return giteaDraft + req.Title
	}
	return req.Title
}

// find returns the newest pull request from head into base (the
// repository's default branch when base is ""). Gitea v1.26 lists pull
// requests by base, not by head, so walking the list for a branch that
// has none read every page, up to maxPages: every write and branch check
// of a new branch did (issue 22 §3). Instead find asks
// GET /repos/{owner}/{repo}/pulls/{base}/{head}, which answers 404 when
// head has no pull request into base. When it has, the answer is
// whichever of them the database returns first (models/issues/pull.go GetPullRequestByBaseHeadInfo has
// no ORDER BY; the oldest, in practice):
//   - an open one is taken as the newest: Gitea opens no second pull
//     request from a head into a base while one is open
//     (services/pull/pull.go NewPullRequest), so a newer one can only be
//     one closed before this one was reopened. Ensure must follow the
//     open one then: the newer closed one would have it open a second,
//     which Gitea refuses.
//   - a merged or closed one may have newer ones: the same drift made
//     again gets a branch of the same name (PullRequest.Stale). find then
//     walks the list newest first to the first page holding one of them,
//     the page of the one Gitea answered at the latest, within maxPages.
//
// A branch with none into base costs one more look, at the open pull
// requests (usually one page): one from head a reviewer retargeted to
// another branch is still the branch's. A closed one into another branch
// is not found; the README's forge table says so.
func (g *giteaBackend) find(_ context.Context, head, base string) (*PullRequest, error) {
	if base == "" {
		repo, resp, err := g.raw.GetRepo(g.owner, g.repo)
		if err != nil {
			return nil, withStatus(httpResp(resp), fmt.Errorf("reading the default branch: %w", err))
		}
		if base = repo.DefaultBranch; base == "" {
			return nil, nil // an empty repository: no branch, no pull request
		}
	}
	pr, resp, err := g.raw.GetPullRequestByBaseHead(g.owner, g.repo, base, head)
	switch {
	case err != nil && httpResp(resp) == nil && strings.Contains(err.Error(), "is older than"):
		// Gitea before 1.22 has no such lookup, and the SDK refuses to
		// send it: walk the pull requests, as before it existed.
		return g.newestWhere(head, sdk.StateAll, nil)
	case err != nil && httpResp(resp) != nil && resp.StatusCode == http.StatusNotFound:
		// None into base; an open one a reviewer retargeted to another
		// branch still counts, or Ensure would open a second pull
		// request of the branch. Open ones are few: usually one page.
		return g.newestWhere(head, sdk.StateOpen, nil)
	case err != nil:
		return nil, withStatus(httpResp(resp), err)
	case pr.State == sdk.StateOpen && !pr.HasMerged:
		return giteaPR(pr), nil
	}
	// Closed or merged: an open one the branch has since, into any base,
	// is the one to follow (a reviewer may have retargeted it).
	if open, err := g.newestWhere(head, sdk.StateOpen, nil); err != nil || open != nil {
		return open, err
	}
	newest, err := g.newestWhere(head, sdk.StateAll, func(pr *sdk.PullRequest) bool { return pr.Base != nil && pr.Base.Ref == base })
	if err != nil || newest != nil {
		return newest, err
	}
	// Older than maxPages pages of pull requests: the one Gitea answered
	// is the best known.
	return giteaPR(pr), nil
}

// newestWhere walks the repository's pull requests in state newest
// first, Gitea's order when none is asked for (issue.created_unix, then
// issue.id, descending: models/issues/issue_search.go applySorts), and
// returns the first from head that into (nil: any base) accepts: no later
// page holds a newer one. nil when none is within maxPages pages.
func (g *giteaBackend) newestWhere(head string, state sdk.StateType, into func(*sdk.PullRequest) bool) (*PullRequest, error) {
	for page := 1; page <= maxPages; page++ {
		prs, resp, err := g.raw.ListRepoPullRequests(g.owner, g.repo, sdk.ListPullRequestsOptions{
			ListOptions: sdk.ListOptions{Page: page, PageSize: giteaPageSize}, State: state,
		})
		if err != nil {
			return nil, withStatus(httpResp(resp), err)
		}
		if best := newestOf(prs, head, into); best != nil {
			return giteaPR(best), nil
		}
		// Gitea names the next page in its Link header. A short page is
		// no sign of the last: a server whose [api].MAX_RESPONSE_ITEMS is
		// under the size asked for answers every page short.
		if resp == nil || resp.NextPage == 0 {
			break
		}
	}
	return nil, nil
}

// giteaPageSize is the page newest asks for: Gitea's default
// [api].MAX_RESPONSE_ITEMS; a server may answer fewer.
const giteaPageSize = 50

// newestOf returns the pull request from head that into accepts (nil:
// any) with the highest number among prs, or nil. Head.Ref turns into
// refs/pull/N/head once the branch is deleted (auto-delete after merge);
// Head.Name, the "label", keeps the branch name.
func newestOf(prs []*sdk.PullRequest, head string, into func(*sdk.PullRequest) bool) *sdk.PullRequest {
	var best *sdk.PullRequest
	for _, pr := range prs {
		if pr.Head == nil || pr.Head.Name != head && pr.Head.Ref != head || into != nil && !into(pr) {
			continue
		}
		if best == nil || pr.Index > best.Index {
			best = pr
		}
	}
	return best
}

// create goes through the SDK, not go-git-providers' Create, which
// keeps only the message of a refusal: a token scoped read:repository
// gets 403 here, and its status tells a read-only token from a forge
// that is down.
func (g *giteaBackend) create(_ context.Context, req Request) (*PullRequest, error) {
	pr, resp, err := g.raw.CreatePullRequest(g.owner, g.repo, sdk.CreatePullRequestOption{
		Head: req.Head, Base: req.Base, Title: g.title(req), Body: req.Body,
	})
	if err != nil {
		return nil, withStatus(httpResp(resp), err)
	}
	return giteaPR(pr), nil
}

// check reads the repository as the token's user sees it. Gitea's answer
// carries that user's permissions (admin, push, pull), so a user who may
// only read is known before anything is created: Gitea lets such a user
// open a pull request between the repository's branches, then refuses
// the labels reflux puts on it (403). The token's own scopes (a token
// scoped read:repository) are not in the answer: they show on the first
// write, as a ReadOnlyError too.
func (g *giteaBackend) check(context.Context) error {
	repo, resp, err := g.raw.GetRepo(g.owner, g.repo)
	if err != nil {
		return withStatus(httpResp(resp), err)
	}
	if p := repo.Permissions; p != nil && !p.Push && !p.Admin {
		return &ReadOnlyError{}
	}
	return nil
}

func (g *giteaBackend) update(_ context.Context, number int, title, body string) error {
	_, resp, err := g.raw.EditPullRequest(g.owner, g.repo, int64(number), sdk.EditPullRequestOption{Title: title, Body: &body})
	return withStatus(httpResp(resp), err)
}

// decorate labels last, as githubBackend.decorate does, for the same
// reason.
func (g *giteaBackend) decorate(_ context.Context, number int, req Request) error {
	if len(req.Assignees) > 0 {
		if _, resp, err := g.raw.EditIssue(g.owner, g.repo, int64(number), sdk.EditIssueOption{Assignees: req.Assignees}); err != nil {
			return withStatus(httpResp(resp), fmt.Errorf("assigning %v: %w", req.Assignees, err))
		}
	}
	if len(req.Reviewers) > 0 {
		resp, err := g.raw.CreateReviewRequests(g.owner, g.repo, int64(number), sdk.PullReviewRequestOptions{Reviewers: req.Reviewers})
		if err != nil {
			return withStatus(httpResp(resp), fmt.Errorf("requesting reviews of %v: %w", req.Reviewers, err))
		}
	}
	if len(req.Labels) > 0 {
		ids, err := g.labelIDs(req.Labels)
		if err != nil {
			return err
		}
		if _, resp, err := g.raw.AddIssueLabels(g.owner, g.repo, int64(number), sdk.IssueLabelsOption{Labels: ids}); err != nil {
			return withStatus(httpResp(resp), err)
		}
	}
	return nil
}

// unlabel takes the ids from the pull request's own labels, not the
// repository's: an organisation's labels are not among the repository's,
// and a label someone removed since find read it is skipped.
func (g *giteaBackend) unlabel(_ context.Context, number int, labels []string) error {
	have, resp, err := g.raw.GetIssueLabels(g.owner, g.repo, int64(number), sdk.ListLabelsOptions{})
	if err != nil {
		return withStatus(httpResp(resp), err)
	}
	for _, l := range have {
		if !slices.Contains(labels, l.Name) {
			continue
		}
		if resp, err := g.raw.DeleteIssueLabel(g.owner, g.repo, int64(number), l.ID); err != nil && !gone(resp) {
			return withStatus(httpResp(resp), fmt.Errorf("removing label %q: %w", l.Name, err))
		}
	}
	return nil
}

func (g *giteaBackend) comment(_ context.Context, number int, body string) error {
	_, resp, err := g.raw.CreateIssueComment(g.owner, g.repo, int64(number), sdk.CreateIssueCommentOption{Body: body})
	return withStatus(httpResp(resp), err)
}

func (g *giteaBackend) close(_ context.Context, number int) error {
	closed := sdk.StateClosed
	_, resp, err := g.raw.EditPullRequest(g.owner, g.repo, int64(number), sdk.EditPullRequestOption{State: &closed})
	return withStatus(httpResp(resp), err)
}

// labelIDs returns the ids of the named labels, creating the missing
// ones: Gitea labels pull requests by id only.
func (g *giteaBackend) labelIDs(names []string) ([]int64, error) {
	have := map[string]int64{}
	for page := 1; page <= maxPages; page++ {
		labels, resp, err := g.raw.ListRepoLabels(g.owner, g.repo, sdk.ListLabelsOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: 50}})
		if err != nil {
			return nil, withStatus(httpResp(resp), err)
		}
		for _, l := range labels {
			have[l.Name] = l.ID
		}
		if len(labels) < 50 {
			break
		}
	}
	ids := make([]int64, 0, len(names))
	for _, n := range names {
		id, ok := have[n]
		if !ok {
			l, resp, err := g.raw.CreateLabel(g.owner, g.repo, sdk.CreateLabelOption{Name: n, Color: labelColor(n)})
			if err != nil {
				return nil, withStatus(httpResp(resp), fmt.Errorf("creating label %q: %w", n, err))
			}
			id = l.ID
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func giteaPR(pr *sdk.PullRequest) *PullRequest {
	out := &PullRequest{Number: int(pr.Index), URL: pr.HTMLURL, Title: pr.Title, Body: pr.Body, State: Open}
	if pr.Head != nil {
		out.HeadCommit = pr.Head.Sha
	}
	switch {
	case pr.HasMerged:
		out.State = Merged
	case pr.State == sdk.StateClosed:
		out.State = Closed
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, l.Name)
	}
	return out
}

// labelColor gives reflux's labels a stable colour: Gitea requires one.
func labelColor(name string) string {
	switch {
	case name == "needs-decision", name == "severity/critical":
		return "#b60205"
	case name == "severity/high":
		return "#d93f0b"
	case strings.HasPrefix(name, "severity/"):
		return "#fbca04"
	}
	return "#0e8a16"
}

func httpResp(r *sdk.Response) *http.Response {
	if r == nil {
		return nil
	}
	return r.Response
}

// gone reports whether Gitea's answer to removing a label says the label
// is gone already. Gitea v1.26 answers 204 for a label the pull request
// no longer carries (models/issues/issue_label.go), 422 for one deleted
// from the repository meanwhile, and 404 for a pull request deleted
// meanwhile, which carries no label any more.
func gone(r *sdk.Response) bool {
	h := httpResp(r)
	return h != nil && (h.StatusCode == http.StatusNotFound || h.StatusCode == http.StatusUnprocessableEntity)
}
