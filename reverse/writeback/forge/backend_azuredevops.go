package forge

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf16"

	"github.com/microsoft/azure-devops-go-api/azuredevops/v7"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/core"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/git"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/webapi"
)

// azureGit is the part of azure-devops-go-api's git client reflux calls.
type azureGit interface {
	GetRepository(context.Context, git.GetRepositoryArgs) (*git.GitRepository, error)
	GetPullRequests(context.Context, git.GetPullRequestsArgs) (*[]git.GitPullRequest, error)
	GetPullRequest(context.Context, git.GetPullRequestArgs) (*git.GitPullRequest, error)
	CreatePullRequest(context.Context, git.CreatePullRequestArgs) (*git.GitPullRequest, error)
	UpdatePullRequest(context.Context, git.UpdatePullRequestArgs) (*git.GitPullRequest, error)
	CreatePullRequestReviewers(context.Context, git.CreatePullRequestReviewersArgs) (*[]git.IdentityRefWithVote, error)
	GetPullRequestLabels(context.Context, git.GetPullRequestLabelsArgs) (*[]core.WebApiTagDefinition, error)
	CreatePullRequestLabel(context.Context, git.CreatePullRequestLabelArgs) (*core.WebApiTagDefinition, error)
	DeletePullRequestLabels(context.Context, git.DeletePullRequestLabelsArgs) error
	CreateThread(context.Context, git.CreateThreadArgs) (*git.GitPullRequestCommentThread, error)
}

var _ azureGit = &git.ClientImpl{}

// azureBackend opens pull requests on Azure DevOps Services or Server
// through github.com/microsoft/azure-devops-go-api. Labels are the pull
// request's labels (tags); reviewers are identity ids; there are no
// assignees.
type azureBackend struct {
	git azureGit
	// org is the organisation (or collection) URL; project and repo name
	// the repository, as route values.
	org, project, repo string
}

// newAzureDevOps takes opts.Token as a personal access token and
// opts.APIURL, when set, as the organisation or collection URL.
func newAzureDevOps(opts Options, transport http.RoundTripper) (backend, error) {
	loc, err := azureRepo(opts.RepoURL, opts.APIURL)
	if err != nil {
		return nil, err
	}
	// NewPatConnection's client would use its own http.Client, and
	// git.NewClient first asks _apis/ResourceAreas where the git area
	// lives: at the organisation URL on dev.azure.com, and on a server the
	// list is empty and the collection URL is used. reflux goes straight
	// to that URL with its own transport; the client still reads the
	// route templates from OPTIONS {org}/_apis before its first call, and
	// keeps them per organisation URL for the life of the process (a
	// package variable of the library, behind its own lock).
	conn := azuredevops.NewPatConnection(loc.org, opts.Token)
	hc := &http.Client{Transport: azureTransport{next: transport}}
	client := azuredevops.NewClientWithOptions(conn, loc.org, azuredevops.WithHTTPClient(hc))
	return &azureBackend{git: &git.ClientImpl{Client: *client}, org: loc.org, project: loc.project, repo: loc.repo}, nil
}

// azureBodyLimit is the longest description Azure DevOps takes, in its
// (.NET) characters, UTF-16 code units: a longer one is refused with 400
// "A description for a pull request must not be longer than 4000
// characters", and the pull request never opens.
const azureBodyLimit = 4000

// azureClipNote ends a description clipped to azureBodyLimit.
const azureClipNote = "\n\n*Cut to the 4,000 characters Azure DevOps keeps of a description; the branch holds every change.*"

// clip cuts body to what Azure DevOps takes, at the end of a line when
// there is one, so a table is not left with half a row.
func (b *azureBackend) clip(body string) string {
	if utf16Len(body) <= azureBodyLimit {
		return body
	}
	room, n, cut := azureBodyLimit-utf16Len(azureClipNote), 0, len(body)
	for i, r := range body {
		if n += utf16.RuneLen(r); n > room {
			cut = i
			break
		}
	}
	if nl := strings.LastIndexByte(body[:cut], '\n'); nl > 0 {
		cut = nl
	}
	return body[:cut] + azureClipNote
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// azureLocation is where a repository lives on Azure DevOps.
type azureLocation struct{ org, project, repo string }

// azureRepo reads the organisation URL, project and repository from a
// clone URL: https://dev.azure.com/ORG/PROJECT/_git/REPO (a project's
// default repository may drop PROJECT), https://ORG.visualstudio.com/
// PROJECT/_git/REPO, or the ssh form ssh.dev.azure.com:v3/ORG/PROJECT/REPO.
// apiURL, when set, is the organisation or collection URL: Azure DevOps
// Server's collection cannot be told from a project in the path.
func azureRepo(raw, apiURL string) (azureLocation, error) {
	host, segs := splitRepoURL(raw)
	org := strings.TrimSuffix(apiURL, "/")
	if len(segs) == 4 && segs[0] == "v3" {
		if org == "" {
			org = "https://dev.azure.com/" + url.PathEscape(segs[1])
		}
		return azureLocation{org: org, project: segs[2], repo: strings.TrimSuffix(segs[3], ".git")}, nil
	}
	i := indexOf(segs, "_git")
	if i < 0 || i != len(segs)-2 {
		return azureLocation{}, fmt.Errorf("repository URL %q is no Azure DevOps repository: want .../PROJECT/_git/REPO or ssh.dev.azure.com:v3/ORG/PROJECT/REPO", raw)
	}
	prefix, repo := segs[:i], strings.TrimSuffix(segs[i+1], ".git")
	var orgSegs int
	switch {
	case org != "":
		u, err := url.Parse(org)
		if err != nil {
			return azureLocation{}, fmt.Errorf("apiURL %q: %w", apiURL, err)
		}
		orgSegs = len(splitPath(u.EscapedPath()))
	case host == "dev.azure.com" && len(prefix) > 0:
		org, orgSegs = "https://dev.azure.com/"+url.PathEscape(prefix[0]), 1
	case strings.HasSuffix(host, ".visualstudio.com"):
		org = "https://" + host
		if len(prefix) > 0 && strings.EqualFold(prefix[0], "DefaultCollection") {
			org, orgSegs = org+"/"+prefix[0], 1
		}
	default:
		return azureLocation{}, fmt.Errorf("repository URL %q: apiURL must name the Azure DevOps Server collection, such as https://%s/tfs/DefaultCollection", raw, host)
	}
	switch len(prefix) - orgSegs {
	case 0: // a project's default repository, named after it
		return azureLocation{org: org, project: repo, repo: repo}, nil
	case 1:
		return azureLocation{org: org, project: prefix[len(prefix)-1], repo: repo}, nil
	}
	return azureLocation{}, fmt.Errorf("repository URL %q: no PROJECT/_git/REPO below the organisation %s", raw, org)
}

// splitRepoURL returns the host of a clone URL (https, ssh:// or scp-like)
// and its unescaped path segments.
func splitRepoURL(raw string) (string, []string) {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Hostname(), splitPath(u.Path)
	}
	if host, path, ok := strings.Cut(raw, ":"); ok && !strings.Contains(host, "/") {
		if _, h, ok := strings.Cut(host, "@"); ok {
			host = h
		}
		return host, splitPath(path)
	}
	return "", nil
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func indexOf(segs []string, s string) int {
	for i, seg := range segs {
		if seg == s {
			return i
		}
	}
	return -1
}

// azureTransport keeps the status of a refusal: azure-devops-go-api
// decodes every error answer as JSON unless it is text/plain, so an HTML
// page (a proxy's, or a sign-in page) would lose its status to a JSON
// syntax error and a refused token would look like an unreachable forge.
// Such answers are marked text/plain, which the client quotes as they are.
type azureTransport struct{ next http.RoundTripper }

func (t azureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp == nil || resp.StatusCode < http.StatusBadRequest {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		resp.Header.Set("Content-Type", "text/plain; charset=utf-8")
	}
	return resp, err
}

// azureStatus is the status of an answer azure-devops-go-api refused, or
// 0. Its client returns WrappedError both as a value and as a pointer.
func azureStatus(err error) int {
	var v azuredevops.WrappedError
	if errors.As(err, &v) && v.StatusCode != nil {
		return *v.StatusCode
	}
	var p *azuredevops.WrappedError
	if errors.As(err, &p) && p != nil && p.StatusCode != nil {
		return *p.StatusCode
	}
	return 0
}

// identities are reviewers as Azure DevOps takes them: identity ids.
func identities(ids []string) *[]webapi.IdentityRef {
	out := make([]webapi.IdentityRef, 0, len(ids))
	for _, id := range ids {
		out = append(out, webapi.IdentityRef{Id: &id})
	}
	return &out
}
