package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/fluxcd/go-git-providers/gitprovider"
	"github.com/google/go-github/v82/github"
	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// State is where a pull request stands.
type State string

const (
	// Open is awaiting review.
	Open State = "open"
	// Merged was merged, by any method (merge commit, squash or rebase).
	Merged State = "merged"
	// Closed was closed without being merged.
	Closed State = "closed"
)

// Request is the pull request reflux wants open for a branch.
type Request struct {
	// Head is the branch reflux pushed; Base the branch Flux applies.
	Head, Base string
	// Commit is the commit the branch holds now; "" when unknown. A merged
	// or closed pull request whose head was another commit belonged to an
	// earlier branch of the same name (see Stale).
	Commit string
	// Proposals say where the open records on Head were proposed: a
	// closed pull request that proposed one of them decided them, and
	// Ensure never opens another for them (see Stale).
	Proposals []Proposal
	// Title and Body are the text reviewers read.
	Title, Body string
	// Labels to add; existing labels are kept, unless Exclusive claims them.
	Labels []string
	// Exclusive lists the label names reflux owns, or prefixes of them
	// ending in "/" (e.g. "needs-decision", "severity/"). Ensure removes
	// from an open pull request any label that matches an Exclusive entry
	// and is not in Labels, so a pull request whose highest severity
	// dropped from critical to low loses severity/critical, and one that
	// stopped needing a decision loses needs-decision. Labels no entry
	// matches are never removed: the ones humans add stay.
	Exclusive []string
	// Draft marks a pull request reflux must never merge: an Alert.
	Draft bool
	// Reviewers and Assignees are forge user names.
	Reviewers, Assignees []string
}

// PullRequest is what the forge says of a branch's pull request.
type PullRequest struct {
	// Number identifies it in the repository.
	Number int
	// URL is its page on the forge.
	URL string
	// State is open, merged or closed.
	State State
	// Title and Body as the forge holds them.
	Title, Body string
	// Labels it carries.
	Labels []string
	// HeadCommit is the commit of its head as the forge last saw it; ""
	// when the forge did not say.
	HeadCommit string
}

// Stale reports whether a merged or closed pull request decided an
// earlier branch of the same name, not the one at commit. reflux names
// branches after the drift they carry, so the same drift made again after
// a reviewer closed its pull request (and reflux deleted the branch) gets
// the same branch name; the closed pull request must not decide the new
// branch. Without both commits it is taken as current, as before.
//
// A commit alone cannot tell that earlier branch from a push onto this
// one after the reviewer closed it (reflux adding a field, a human's
// commit): the forge keeps a closed pull request's head where the close
// left it. So a closed pull request that proposed one of the open
// records' proposals is never Stale, whatever the branch holds now
// (issue 22 §3): reopening it would carry the fields the reviewer closed.
// A merged one is: what it merged is in the source branch, and the
// branch, rebuilt from there, carries only what it did not.
func (pr PullRequest) Stale(commit string, proposed ...Proposal) bool {
	if pr.State == Open || pr.State == "" || pr.HeadCommit == "" || commit == "" || sameCommit(pr.HeadCommit, commit) {
		return false
	}
	return pr.State != Closed || !slices.ContainsFunc(proposed, pr.Proposed)
}

// HeadIs reports whether the forge's head of pr is commit: the branch is
// as the pull request last showed it. A head the forge did not name is
// taken as commit, as Stale takes it as current.
func (pr PullRequest) HeadIs(commit string) bool {
	return pr.HeadCommit == "" || sameCommit(pr.HeadCommit, commit)
}

// Proposal is where an open record was proposed: the pull request
// recorded with it and the commit reflux last pushed it at.
type Proposal struct {
	PullRequest, Commit string
}

// Proposed reports whether pr proposed p: it is the pull request p was
// recorded with, or its head is the commit p was pushed at.
func (pr PullRequest) Proposed(p Proposal) bool {
	return p.PullRequest != "" && p.PullRequest == pr.URL ||
		p.Commit != "" && pr.HeadCommit != "" && sameCommit(p.Commit, pr.HeadCommit)
}

// sameCommit tells whether two hashes name one commit: equal, or one the
// other's prefix of at least 7 digits, as Bitbucket Cloud shortens the
// head's hash to 12.
func sameCommit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || len(a) >= 7 && strings.HasPrefix(b, a)
}

// Result is what Ensure did.
type Result struct {
	PullRequest
	// Created is true when Ensure opened the pull request; Updated when
	// it changed the title, body or labels (added or removed) of an open
	// one.
	Created, Updated bool
}

// Options say which forge and repository a Client talks to.
type Options struct {
	// Provider is github, gitlab, gitea, bitbucketserver, bitbucket
	// (Bitbucket Cloud) or azuredevops.
	Provider string
	// Token is the API token.
	Token string
	// APIURL is a self-hosted forge's base URL; empty for the public host.
	// For Azure DevOps it is the organisation or collection URL.
	APIURL string
	// RepoURL is the repository's clone URL (https or ssh), from the
	// GitRepository.
	RepoURL string
	// Base is the branch reflux's pull requests target, the
	// GitRepository's; "" when unknown. Find and Close look for a
	// branch's pull request into it where the forge cannot look by head
	// alone (Gitea); without it they look into the repository's default
	// branch. Ensure uses its Request's Base.
	Base string
	// Transport, when set, carries the requests (tests, proxies).
	Transport http.RoundTripper
}

// ErrUnsupported means the provider is not one reflux knows.
var ErrUnsupported = errors.New("unsupported pull-request provider")

// Error is a forge's answer to a request that failed: the status and
// message it sent, so conditions can quote it.
type Error struct {
	// Op is what reflux asked, such as "creating the pull request".
	Op string
	// Err is the provider client's error, which quotes the answer.
	Err error
}

func (e *Error) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Unauthorized reports whether the forge refused the token (401 or 403):
// retrying without a new token will not help.
func Unauthorized(err error) bool {
	code := StatusCode(err)
	return code == http.StatusUnauthorized || code == http.StatusForbidden
}

// StatusCode returns the HTTP status the forge answered a failed request
// with, or 0 when it did not answer (unreachable, timed out).
func StatusCode(err error) int {
	var s *statusError
	if errors.As(err, &s) {
		return s.code
	}
	var h *gitprovider.HTTPError
	if errors.As(err, &h) && h.Response != nil {
		return h.Response.StatusCode
	}
	var gh *github.ErrorResponse
	if errors.As(err, &gh) && gh.Response != nil {
		return gh.Response.StatusCode
	}
	var gl *gitlab.ErrorResponse
	if errors.As(err, &gl) && gl.Response != nil {
		return gl.Response.StatusCode
	}
	// GitLab's client answers a 404 with a bare sentinel (CheckResponse
	// in client-go), not an ErrorResponse.
	if errors.Is(err, gitlab.ErrNotFound) {
		return http.StatusNotFound
	}
	return azureStatus(err)
}

// statusError keeps the status of an answer whose client reports it only
// beside the error (the Gitea SDK).
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// withStatus attaches resp's status to err.
func withStatus(resp *http.Response, err error) error {
	if err == nil || resp == nil {
		return err
	}
	return &statusError{code: resp.StatusCode, err: err}
}

// backend is one provider's way to do what go-git-providers does not.
type backend interface {
	// find returns the newest pull request whose head is branch, in any
	// state, or nil. base is the branch it targets, "" when unknown: most
	// forges list pull requests by head and ignore it; Gitea cannot, and
	// asks by base and head instead (giteaBackend.find).
	find(ctx context.Context, head, base string) (*PullRequest, error)
	// create opens the pull request, as a draft when asked.
	create(ctx context.Context, req Request) (*PullRequest, error)
	// title is the title the forge shows for req: Gitea and GitLab read a
	// title prefix as the draft mark.
	title(req Request) string
	// update sets the title and body of pull request number.
	update(ctx context.Context, number int, title, body string) error
	// decorate adds labels, reviewers and assignees.
	decorate(ctx context.Context, number int, req Request) error
	// unlabel removes labels from pull request number; a label it no
	// longer carries is not an error.
	unlabel(ctx context.Context, number int, labels []string) error
	// comment posts body on pull request number.
	comment(ctx context.Context, number int, body string) error
	// close closes pull request number without merging it.
	close(ctx context.Context, number int) error
	// check reads the repository: the token works and reaches it, and,
	// where the answer says so, may write it (a *ReadOnlyError if not).
	check(ctx context.Context) error
}

// Client opens and follows pull requests in one repository.
type Client struct {
	b backend
	// base is Options.Base.
	base string
}

// New returns a Client for the repository. Creating one reads nothing
// from the forge except, for Gitea, its version (the SDK's own check).
func New(ctx context.Context, opts Options) (*Client, error) {
	owner, repo, err := ownerRepo(opts.RepoURL)
	if err != nil {
		return nil, err
	}
	if opts.Token == "" {
		return nil, errors.New("the pull-request token is empty")
	}
	last := &atomic.Int32{}
	copts := []gitprovider.ClientOption{gitprovider.WithPreChainTransportHook(func(rt http.RoundTripper) http.RoundTripper {
		if opts.Transport != nil {
			rt = opts.Transport
		}
		return ctxTransport{ctx: ctx, next: rt, last: last}
	})}
	var b backend
	switch opts.Provider {
	case "github":
		b, err = newGitHub(opts, owner, repo, copts)
	case "gitlab":
		b, err = newGitLab(opts, owner, repo, copts)
	case "gitea":
		b, err = newGitea(opts, owner, repo, copts)
	case "bitbucketserver":
		b, err = newBitbucketServer(opts, owner, repo, copts)
	case "bitbucket":
		b, err = newBitbucketCloud(opts, owner, repo, ctxTransport{ctx: ctx, next: opts.Transport, last: last})
	case "azuredevops":
		b, err = newAzureDevOps(opts, ctxTransport{ctx: ctx, next: opts.Transport, last: last})
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupported, opts.Provider)
	}
	if err != nil {
		if code := int(last.Load()); code >= 400 && StatusCode(err) == 0 {
			// The Gitea SDK reads the server's version while connecting
			// and keeps only the message of a refusal.
			err = &statusError{code: code, err: err}
		}
		return nil, &Error{Op: "connecting to " + opts.Provider, Err: err}
	}
	return &Client{b: b, base: opts.Base}, nil
}

// Check proves that the token works and reaches the repository. Where
// the forge's answer says the token user's permissions (Gitea, GitHub),
// a user who may only read is a *ReadOnlyError; elsewhere, and for a
// token whose own scopes allow only reads, the first write says so.
func (c *Client) Check(ctx context.Context) error {
	if err := c.b.check(ctx); err != nil {
		return &Error{Op: "reading the repository", Err: err}
	}
	return nil
}

// ownerRepo splits a clone URL into the owner path (a user, an
// organisation, or GitLab's group/subgroup) and the repository name.
func ownerRepo(raw string) (owner, repo string, err error) {
	path := raw
	if u, perr := url.Parse(raw); perr == nil && u.Host != "" {
		path = u.Path
	} else if i := strings.Index(raw, ":"); i > 0 && !strings.Contains(raw[:i], "/") {
		// scp-like git@host:owner/repo.git
		path = raw[i+1:]
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	i := strings.LastIndex(path, "/")
	if i <= 0 || i == len(path)-1 {
		return "", "", fmt.Errorf("repository URL %q names no owner/repository", raw)
	}
	return path[:i], path[i+1:], nil
}

// ctxTransport binds requests that carry no context of their own (the
// Gitea SDK's) to the Client's, so a run's timeout reaches them.
type ctxTransport struct {
	ctx  context.Context
	next http.RoundTripper
	// last is the status of the latest answer.
	last *atomic.Int32
}

func (t ctxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Context() == context.Background() {
		req = req.WithContext(t.ctx)
	}
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if resp != nil {
		t.last.Store(int32(resp.StatusCode))
	}
	return resp, err
}
