package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// bitbucketCloudAPI is Bitbucket Cloud's REST API 2.0.
const bitbucketCloudAPI = "https://api.bitbucket.org/2.0"

// bitbucketCloudBackend speaks Bitbucket Cloud's REST API 2.0 over plain
// HTTP. go-git-providers' bitbucket package is a placeholder, and the
// client it would wrap, ktrysmt/go-bitbucket v0.10.0, cannot serve
// reflux: its pull-request List sets the state filter with query.Set, so
// only the last state survives and a merged or declined pull request of
// the branch is never seen (reflux would open a second one), and its
// Update sends the reviewers field empty when none are given, which
// removes every reviewer. The six requests reflux needs are written here.
//
// Bitbucket Cloud has no pull-request labels and no assignees, as
// Bitbucket Server; reviewers are account ids ({uuid} or account_id),
// since Bitbucket Cloud no longer looks users up by name.
type bitbucketCloudBackend struct {
	client *http.Client
	// base is the API's base URL, repo the repository's path below it.
	base, repo string
	// auth sets the request's credentials.
	auth func(*http.Request)
}

// newBitbucketCloud takes opts.Token as an access token (repository,
// project or workspace), sent as a bearer token, or USERNAME:APP_PASSWORD,
// sent as basic auth. opts.APIURL defaults to api.bitbucket.org/2.0.
func newBitbucketCloud(opts Options, owner, repo string, transport http.RoundTripper) (backend, error) {
	base := strings.TrimSuffix(opts.APIURL, "/")
	if base == "" {
		base = bitbucketCloudAPI
	}
	b := &bitbucketCloudBackend{client: &http.Client{Transport: transport}, base: base,
		repo: "/repositories/" + url.PathEscape(owner) + "/" + url.PathEscape(repo)}
	if user, password, ok := strings.Cut(opts.Token, ":"); ok {
		if user == "" || password == "" {
			return nil, errors.New("the Bitbucket Cloud token must be ACCESS_TOKEN or USERNAME:APP_PASSWORD")
		}
		b.auth = func(r *http.Request) { r.SetBasicAuth(user, password) }
	} else {
		token := opts.Token
		b.auth = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
	}
	return b, nil
}

// noLabels tells relabel that the forge keeps none.
func (b *bitbucketCloudBackend) noLabels() {}

type bbcBranch struct {
	Branch struct {
		Name string `json:"name"`
	} `json:"branch"`
	Commit *struct {
		Hash string `json:"hash"`
	} `json:"commit,omitempty"`
}

// bbcAccount names a reviewer: by account_id, or by {uuid}.
type bbcAccount struct {
	UUID      string `json:"uuid,omitempty"`
	AccountID string `json:"account_id,omitempty"`
}

func (a bbcAccount) is(id string) bool { return id != "" && (a.UUID == id || a.AccountID == id) }

func account(id string) bbcAccount {
	if strings.HasPrefix(id, "{") {
		return bbcAccount{UUID: id}
	}
	return bbcAccount{AccountID: id}
}

// bbcPullRequest is the part of a pull request reflux reads and writes.
type bbcPullRequest struct {
	ID          int          `json:"id,omitempty"`
	Title       string       `json:"title"`
	Description string       `json:"description"`
	State       string       `json:"state,omitempty"`
	Draft       bool         `json:"draft,omitempty"`
	Source      bbcBranch    `json:"source"`
	Destination *bbcBranch   `json:"destination,omitempty"`
	Reviewers   []bbcAccount `json:"reviewers"`
	Links       *struct {
		HTML struct {
			Href string `json:"href"`
		} `json:"html"`
	} `json:"links,omitempty"`
}

func (p bbcPullRequest) pullRequest() *PullRequest {
	out := &PullRequest{Number: p.ID, Title: p.Title, Body: p.Description, State: Open}
	if p.Links != nil {
		out.URL = p.Links.HTML.Href
	}
	if p.Source.Commit != nil {
		// Bitbucket Cloud gives the head's hash shortened to 12 digits;
		// PullRequest.Stale compares it as a prefix.
		out.HeadCommit = p.Source.Commit.Hash
	}
	switch p.State {
	case "MERGED":
		out.State = Merged
	case "DECLINED", "SUPERSEDED":
		out.State = Closed
	}
	return out
}

// do sends one request to path below the repository and decodes the
// answer into out when it is not nil.
func (b *bitbucketCloudBackend) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := b.base + b.repo + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	b.auth(req)
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= http.StatusBadRequest {
		return &statusError{code: resp.StatusCode, err: fmt.Errorf("%s %s: %s: %s", method, b.repo+path, resp.Status, bytes.TrimSpace(data))}
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, out)
}

func (b *bitbucketCloudBackend) title(req Request) string { return req.Title }

// find asks for the branch's pull requests in every state, newest first:
// Bitbucket Cloud lists only open ones unless each state is asked for.
func (b *bitbucketCloudBackend) find(ctx context.Context, head, _ string) (*PullRequest, error) {
	var page struct {
		Values []bbcPullRequest `json:"values"`
	}
	q := url.Values{
		"q":       {fmt.Sprintf("source.branch.name = %q", head)},
		"state":   {"OPEN", "MERGED", "DECLINED", "SUPERSEDED"},
		"sort":    {"-id"},
		"pagelen": {"1"},
	}
	if err := b.do(ctx, http.MethodGet, "/pullrequests", q, nil, &page); err != nil {
		return nil, err
	}
	for _, p := range page.Values {
		if p.Source.Branch.Name == head {
			return p.pullRequest(), nil
		}
	}
	return nil, nil
}

// create opens the pull request with its reviewers, as a draft when
// asked.
func (b *bitbucketCloudBackend) create(ctx context.Context, req Request) (*PullRequest, error) {
	in := bbcPullRequest{Title: req.Title, Description: req.Body, Draft: req.Draft, Destination: &bbcBranch{},
		Reviewers: []bbcAccount{}}
	in.Source.Branch.Name, in.Destination.Branch.Name = req.Head, req.Base
	for _, r := range req.Reviewers {
		in.Reviewers = append(in.Reviewers, account(r))
	}
	var out bbcPullRequest
	if err := b.do(ctx, http.MethodPost, "/pullrequests", nil, in, &out); err != nil {
		return nil, err
	}
	return out.pullRequest(), nil
}

func (b *bitbucketCloudBackend) get(ctx context.Context, number int) (bbcPullRequest, error) {
	var p bbcPullRequest
	err := b.do(ctx, http.MethodGet, "/pullrequests/"+strconv.Itoa(number), nil, nil, &p)
	return p, err
}

// put writes the title, body and reviewers: the reviewers are always
// sent, as they are, since a PUT without them would drop them.
func (b *bitbucketCloudBackend) put(ctx context.Context, number int, title, body string, reviewers []bbcAccount) error {
	in := struct {
		Title       string       `json:"title"`
		Description string       `json:"description"`
		Reviewers   []bbcAccount `json:"reviewers"`
	}{title, body, reviewers}
	if in.Reviewers == nil {
		in.Reviewers = []bbcAccount{}
	}
	return b.do(ctx, http.MethodPut, "/pullrequests/"+strconv.Itoa(number), nil, in, nil)
}

func (b *bitbucketCloudBackend) update(ctx context.Context, number int, title, body string) error {
	p, err := b.get(ctx, number)
	if err != nil {
		return err
	}
	return b.put(ctx, number, title, body, p.Reviewers)
}

// decorate adds the reviewers the pull request lacks; labels and
// assignees have no place on Bitbucket Cloud.
func (b *bitbucketCloudBackend) decorate(ctx context.Context, number int, req Request) error {
	if len(req.Reviewers) == 0 {
		return nil
	}
	p, err := b.get(ctx, number)
	if err != nil {
		return err
	}
	reviewers, added := p.Reviewers, false
	for _, r := range req.Reviewers {
		found := false
		for _, have := range reviewers {
			found = found || have.is(r)
		}
		if !found {
			reviewers, added = append(reviewers, account(r)), true
		}
	}
	if !added {
		return nil
	}
	if err := b.put(ctx, number, p.Title, p.Description, reviewers); err != nil {
		return fmt.Errorf("requesting reviews of %v: %w", req.Reviewers, err)
	}
	return nil
}

func (b *bitbucketCloudBackend) unlabel(context.Context, int, []string) error { return nil }

func (b *bitbucketCloudBackend) comment(ctx context.Context, number int, body string) error {
	in := map[string]map[string]string{"content": {"raw": body}}
	return b.do(ctx, http.MethodPost, "/pullrequests/"+strconv.Itoa(number)+"/comments", nil, in, nil)
}

// close declines the pull request, Bitbucket's close without merge.
func (b *bitbucketCloudBackend) close(ctx context.Context, number int) error {
	return b.do(ctx, http.MethodPost, "/pullrequests/"+strconv.Itoa(number)+"/decline", nil, nil, nil)
}

// check reads the repository.
func (b *bitbucketCloudBackend) check(ctx context.Context) error {
	return b.do(ctx, http.MethodGet, "", nil, nil, nil)
}
