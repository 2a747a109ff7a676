package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/fluxcd/go-git-providers/gitprovider"
	"github.com/fluxcd/go-git-providers/stash"
)

// bitbucketServerBackend speaks Bitbucket Server (Data Center) REST 1.0
// through go-git-providers' stash client, which signs and retries the
// requests. Bitbucket Server has no pull-request labels and no
// assignees: Request.Labels and Assignees are left out there (the
// severity and the decision are in the title and body already), and
// reviewers are the nearest it has to both.
type bitbucketServerBackend struct {
	providerRepo
	raw *stash.Client
	// project is the project key, slug the repository's.
	project, slug string
}

// newBitbucketServer connects to opts.APIURL, the server's base URL,
// with opts.Token, an HTTP access token the stash client sends as a
// bearer token. The client wants a user name too, which it does not send:
// "USERNAME:TOKEN" gives one, else Bitbucket's own name for token access,
// x-token-auth, stands in.
func newBitbucketServer(opts Options, owner, repo string, copts []gitprovider.ClientOption) (backend, error) {
	if opts.APIURL == "" {
		return nil, errors.New("pullRequest.apiURL is required for Bitbucket Server: the server's base URL")
	}
	user, token, ok := strings.Cut(opts.Token, ":")
	if !ok {
		user, token = "x-token-auth", opts.Token
	}
	if user == "" || token == "" {
		return nil, errors.New("the Bitbucket Server token must be TOKEN or USERNAME:TOKEN")
	}
	copts = append(copts, gitprovider.WithDomain(strings.TrimSuffix(opts.APIURL, "/")))
	c, err := stash.NewStashClient(user, token, copts...)
	if err != nil {
		return nil, err
	}
	raw, ok := c.Raw().(*stash.Client)
	if !ok {
		return nil, fmt.Errorf("go-git-providers' stash client is a %T", c.Raw())
	}
	// HTTP clone URLs are https://host/scm/PROJECT/repo.git.
	project := strings.TrimPrefix(owner, "scm/")
	return &bitbucketServerBackend{raw: raw, project: project, slug: repo, providerRepo: providerRepo{ggp: c,
		ref: gitprovider.OrgRepositoryRef{
			OrganizationRef: gitprovider.OrganizationRef{Domain: c.SupportedDomain(), Organization: project}, RepositoryName: repo,
		}}}, nil
}

// noLabels tells relabel that the forge keeps none.
func (b *bitbucketServerBackend) noLabels() {}

// bbsRef is a branch as pull requests name it.
type bbsRef struct {
	ID           string `json:"id"`
	DisplayID    string `json:"displayId,omitempty"`
	LatestCommit string `json:"latestCommit,omitempty"`
}

type bbsUser struct {
	Name string `json:"name"`
}

type bbsParticipant struct {
	User bbsUser `json:"user"`
	Role string  `json:"role,omitempty"`
}

// bbsPullRequest is the part of a pull request reflux reads and writes.
type bbsPullRequest struct {
	ID          int              `json:"id,omitempty"`
	Version     int              `json:"version"`
	Title       string           `json:"title"`
	Description string           `json:"description"`
	State       string           `json:"state,omitempty"`
	Draft       bool             `json:"draft,omitempty"`
	FromRef     bbsRef           `json:"fromRef"`
	ToRef       bbsRef           `json:"toRef"`
	Reviewers   []bbsParticipant `json:"reviewers,omitempty"`
	Links       struct {
		Self []struct {
			Href string `json:"href"`
		} `json:"self"`
	} `json:"links,omitempty"`
}

func (p bbsPullRequest) pullRequest() *PullRequest {
	out := &PullRequest{Number: p.ID, Title: p.Title, Body: p.Description, State: Open, HeadCommit: p.FromRef.LatestCommit}
	if len(p.Links.Self) > 0 {
		out.URL = p.Links.Self[0].Href
	}
	switch p.State {
	case "MERGED":
		out.State = Merged
	case "DECLINED":
		out.State = Closed
	}
	return out
}

// do sends one request to the repository's pull requests, path below
// them, and decodes the answer into out when it is not nil. The stash
// client returns no error for a 400 or a 404: the status is checked here.
func (b *bitbucketServerBackend) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	uri := "/rest/api/1.0/projects/" + url.PathEscape(b.project) + "/repos/" + url.PathEscape(b.slug) + "/pull-requests" + path
	opts := []stash.RequestOptionFunc{stash.WithQuery(query)}
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		opts = append(opts, stash.WithBody(bytes.NewReader(data)), stash.WithHeader(http.Header{"Content-Type": {"application/json"}}))
	}
	req, err := b.raw.NewRequest(ctx, method, uri, opts...)
	if err != nil {
		return err
	}
	data, resp, err := b.raw.Do(req)
	if err != nil {
		return withStatus(resp, err)
	}
	if resp != nil && resp.StatusCode >= http.StatusBadRequest {
		return &statusError{code: resp.StatusCode, err: fmt.Errorf("%s %s: %s: %s", method, uri, resp.Status, bytes.TrimSpace(data))}
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, out)
}

func (b *bitbucketServerBackend) title(req Request) string { return req.Title }

func (b *bitbucketServerBackend) find(ctx context.Context, head, _ string) (*PullRequest, error) {
	var page struct {
		Values []bbsPullRequest `json:"values"`
	}
	q := url.Values{"state": {"ALL"}, "direction": {"OUTGOING"}, "at": {"refs/heads/" + head}, "limit": {"100"}}
	if err := b.do(ctx, http.MethodGet, "", q, nil, &page); err != nil {
		return nil, err
	}
	var best *bbsPullRequest
	for i, p := range page.Values {
		if p.FromRef.DisplayID == head && (best == nil || p.ID > best.ID) {
			best = &page.Values[i]
		}
	}
	if best == nil {
		return nil, nil
	}
	return best.pullRequest(), nil
}

// create opens the pull request with its reviewers, as a draft when
// asked (Bitbucket Server 8.18 and later; older servers ignore it).
func (b *bitbucketServerBackend) create(ctx context.Context, req Request) (*PullRequest, error) {
	in := bbsPullRequest{Title: b.title(req), Description: req.Body, Draft: req.Draft,
		FromRef: bbsRef{ID: "refs/heads/" + req.Head}, ToRef: bbsRef{ID: "refs/heads/" + req.Base}}
	for _, r := range req.Reviewers {
		in.Reviewers = append(in.Reviewers, bbsParticipant{User: bbsUser{Name: r}})
	}
	var out bbsPullRequest
	if err := b.do(ctx, http.MethodPost, "", nil, in, &out); err != nil {
		return nil, err
	}
	return out.pullRequest(), nil
}

// get reads pull request number: an update and a decline must name the
// version they change.
func (b *bitbucketServerBackend) get(ctx context.Context, number int) (bbsPullRequest, error) {
	var p bbsPullRequest
	err := b.do(ctx, http.MethodGet, "/"+strconv.Itoa(number), nil, nil, &p)
	return p, err
}

// update sets the title and body, keeping the reviewers: an update
// without them would drop them.
func (b *bitbucketServerBackend) update(ctx context.Context, number int, title, body string) error {
	p, err := b.get(ctx, number)
	if err != nil {
		return err
	}
	in := struct {
		Version     int              `json:"version"`
		Title       string           `json:"title"`
		Description string           `json:"description"`
		Reviewers   []bbsParticipant `json:"reviewers"`
	}{Version: p.Version, Title: title, Description: body, Reviewers: p.Reviewers}
	return b.do(ctx, http.MethodPut, "/"+strconv.Itoa(number), nil, in, nil)
}

// decorate adds the reviewers create did not; labels and assignees have
// no place on Bitbucket Server.
func (b *bitbucketServerBackend) decorate(ctx context.Context, number int, req Request) error {
	if len(req.Reviewers) == 0 {
		return nil
	}
	p, err := b.get(ctx, number)
	if err != nil {
		return err
	}
	for _, r := range req.Reviewers {
		if reviewing(p.Reviewers, r) {
			continue
		}
		in := bbsParticipant{User: bbsUser{Name: r}, Role: "REVIEWER"}
		if err := b.do(ctx, http.MethodPost, "/"+strconv.Itoa(number)+"/participants", nil, in, nil); err != nil {
			return fmt.Errorf("requesting a review of %s: %w", r, err)
		}
	}
	return nil
}

func reviewing(ps []bbsParticipant, name string) bool {
	for _, p := range ps {
		if p.User.Name == name {
			return true
		}
	}
	return false
}

func (b *bitbucketServerBackend) unlabel(context.Context, int, []string) error { return nil }

func (b *bitbucketServerBackend) comment(ctx context.Context, number int, body string) error {
	return b.do(ctx, http.MethodPost, "/"+strconv.Itoa(number)+"/comments", nil, map[string]string{"text": body}, nil)
}

// close declines the pull request, Bitbucket Server's close without merge.
func (b *bitbucketServerBackend) close(ctx context.Context, number int) error {
	p, err := b.get(ctx, number)
	if err != nil {
		return err
	}
	q := url.Values{"version": {strconv.Itoa(p.Version)}}
	return b.do(ctx, http.MethodPost, "/"+strconv.Itoa(number)+"/decline", q, map[string]int{"version": p.Version}, nil)
}
