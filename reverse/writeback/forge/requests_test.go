package forge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// These tests pin the requests reflux sends GitHub and GitLab: only Gitea
// runs for real in the test environment (gitea_test.go), so what the other
// two forges would receive is checked here against recording servers that
// answer as the forges' API documentation says.

// call is one request a recording server saw.
type call struct {
	Method, Path, Query string
	// Auth is the Authorization header.
	Auth string
	Body map[string]any
	// List is a body that is a JSON array (GitHub's labels).
	List []any
}

func (c call) String() string { return c.Method + " " + c.Path }

// recorder answers each "METHOD path" with a canned JSON document and
// records every request.
type recorder struct {
	mu      sync.Mutex
	calls   []call
	answers map[string]string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	c := call{Method: req.Method, Path: req.URL.EscapedPath(), Query: req.URL.RawQuery, Auth: req.Header.Get("Authorization")}
	if len(b) > 0 {
		if b[0] == '[' {
			_ = json.Unmarshal(b, &c.List)
		} else {
			_ = json.Unmarshal(b, &c.Body)
		}
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	answer, ok := r.answers[c.String()]
	if !ok {
		http.Error(w, `{"message":"no route `+c.String()+`"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if req.Method == http.MethodPost {
		w.WriteHeader(http.StatusCreated)
	}
	_, _ = io.WriteString(w, answer)
}

func (r *recorder) seen() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// keys returns "METHOD path" of every request, in the order sent.
func (r *recorder) keys() []string {
	var out []string
	for _, c := range r.seen() {
		out = append(out, c.String())
	}
	return out
}

// all returns every request to key, in the order sent.
func (r *recorder) all(key string) []call {
	var out []call
	for _, c := range r.seen() {
		if c.String() == key {
			out = append(out, c)
		}
	}
	return out
}

func (r *recorder) find(key string) (call, bool) {
	for _, c := range r.seen() {
		if c.String() == key {
			return c, true
		}
	}
	return call{}, false
}

func alertRequest() Request {
	return Request{Head: "reflux/apps-web/needs-decision-0123456789ab", Base: "main",
		Title: "apps/web: image of Deployment/web", Body: "| object | pointer |",
		Labels: []string{"reflux", "needs-decision", "severity/high"}, Draft: true,
		Reviewers: []string{"alice"}, Assignees: []string{"bob"}}
}

func TestGitHubRequests(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		"GET /api/v3/repos/acme/fleet/pulls":                        `[]`,
		"POST /api/v3/repos/acme/fleet/pulls":                       `{"number":7,"html_url":"https://gh.example/acme/fleet/pull/7","state":"open"}`,
		"POST /api/v3/repos/acme/fleet/issues/7/labels":             `[]`,
		"POST /api/v3/repos/acme/fleet/issues/7/assignees":          `{"number":7}`,
		"POST /api/v3/repos/acme/fleet/pulls/7/requested_reviewers": `{"number":7}`,
	}}
	srv := httptest.NewTLSServer(rec)
	defer srv.Close()
	c, err := New(context.Background(), Options{Provider: "github", Token: "ghp-token", APIURL: srv.URL,
		RepoURL: "https://gh.example/acme/fleet.git", Transport: srv.Client().Transport})
	g.Expect(err).ToNot(HaveOccurred())

	res, err := c.Ensure(context.Background(), alertRequest())
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(res.Created).To(BeTrue())
	g.Expect(res.URL).To(Equal("https://gh.example/acme/fleet/pull/7"))

	list, _ := rec.find("GET /api/v3/repos/acme/fleet/pulls")
	g.Expect(list.Query).To(ContainSubstring("state=all"))
	g.Expect(list.Query).To(ContainSubstring("head=acme%3Areflux%2Fapps-web%2Fneeds-decision-0123456789ab"))
	create, _ := rec.find("POST /api/v3/repos/acme/fleet/pulls")
	g.Expect(create.Body).To(HaveKeyWithValue("draft", true), "an Alert pull request is a draft on GitHub")
	g.Expect(create.Body).To(HaveKeyWithValue("title", "apps/web: image of Deployment/web"))
	g.Expect(create.Body).To(HaveKeyWithValue("head", "reflux/apps-web/needs-decision-0123456789ab"))
	g.Expect(create.Body).To(HaveKeyWithValue("base", "main"))
	labels, _ := rec.find("POST /api/v3/repos/acme/fleet/issues/7/labels")
	g.Expect(labels.List).To(ConsistOf("reflux", "needs-decision", "severity/high"))
	rev, _ := rec.find("POST /api/v3/repos/acme/fleet/pulls/7/requested_reviewers")
	g.Expect(rev.Body).To(HaveKeyWithValue("reviewers", ConsistOf("alice")))
	asg, _ := rec.find("POST /api/v3/repos/acme/fleet/issues/7/assignees")
	g.Expect(asg.Body).To(HaveKeyWithValue("assignees", ConsistOf("bob")))
}

func TestGitHubReusesOpenPullRequest(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		"GET /api/v3/repos/acme/fleet/pulls": `[{"number":3,"state":"open","title":"old","body":"old body",
			"html_url":"https://gh.example/acme/fleet/pull/3","head":{"ref":"reflux/apps-web/0123456789ab"},
			"labels":[{"name":"reflux"}]}]`,
		"PATCH /api/v3/repos/acme/fleet/pulls/3":        `{"number":3}`,
		"POST /api/v3/repos/acme/fleet/issues/3/labels": `[]`,
	}}
	srv := httptest.NewTLSServer(rec)
	defer srv.Close()
	c, err := New(context.Background(), Options{Provider: "github", Token: "t", APIURL: srv.URL,
		RepoURL: "git@gh.example:acme/fleet.git", Transport: srv.Client().Transport})
	g.Expect(err).ToNot(HaveOccurred())
	req := Request{Head: "reflux/apps-web/0123456789ab", Base: "main", Title: "new", Body: "new body",
		Labels: []string{"reflux", "severity/low"}}
	res, err := c.Ensure(context.Background(), req)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(res.Created).To(BeFalse(), "an open pull request for the head is reused")
	g.Expect(res.Updated).To(BeTrue())
	for _, cl := range rec.seen() {
		g.Expect(cl.String()).ToNot(Equal("POST /api/v3/repos/acme/fleet/pulls"), "no second pull request")
	}
	edit, _ := rec.find("PATCH /api/v3/repos/acme/fleet/pulls/3")
	g.Expect(edit.Body).To(HaveKeyWithValue("body", "new body"))
	labels, _ := rec.find("POST /api/v3/repos/acme/fleet/issues/3/labels")
	g.Expect(labels.List).To(ConsistOf("severity/low"), "only the missing label is added")
}

func TestGitHubMergedStateFromList(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		"GET /api/v3/repos/acme/fleet/pulls": `[{"number":3,"state":"closed","merged_at":"2026-01-02T03:04:05Z",
			"head":{"ref":"reflux/a/b"}},{"number":1,"state":"closed","head":{"ref":"reflux/a/b"}}]`,
	}}
	srv := httptest.NewTLSServer(rec)
	defer srv.Close()
	c, err := New(context.Background(), Options{Provider: "github", Token: "t", APIURL: srv.URL,
		RepoURL: "https://gh.example/acme/fleet", Transport: srv.Client().Transport})
	g.Expect(err).ToNot(HaveOccurred())
	pr, ok, err := c.Find(context.Background(), "reflux/a/b")
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(pr.Number).To(Equal(3), "the newest pull request of the head counts")
	g.Expect(pr.State).To(Equal(Merged), "a squash or rebase merge sets merged_at too")
}

func TestGitLabRequests(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		"GET /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests":  `[]`,
		"GET /api/v4/projects/acme%2Fplatform%2Ffleet":                 `{"id":5,"name":"fleet","path_with_namespace":"acme/platform/fleet"}`,
		"POST /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests": `{"iid":9,"web_url":"https://gl.example/acme/platform/fleet/-/merge_requests/9","state":"opened"}`,
		"GET /api/v4/users": `[{"id":41,"username":"alice"}]`,
		"PUT /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests/9": `{"iid":9}`,
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := New(context.Background(), Options{Provider: "gitlab", Token: "glpat", APIURL: srv.URL,
		RepoURL: "https://gl.example/acme/platform/fleet.git"})
	g.Expect(err).ToNot(HaveOccurred())
	req := alertRequest()
	req.Assignees = []string{"alice"}
	res, err := c.Ensure(context.Background(), req)
	g.Expect(err).ToNot(HaveOccurred(), "calls: %v", rec.seen())
	g.Expect(res.Created).To(BeTrue())
	g.Expect(res.URL).To(Equal("https://gl.example/acme/platform/fleet/-/merge_requests/9"))

	list, _ := rec.find("GET /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests")
	g.Expect(list.Query).To(ContainSubstring("state=all"))
	g.Expect(list.Query).To(ContainSubstring("source_branch=reflux%2Fapps-web%2Fneeds-decision-0123456789ab"))
	create, _ := rec.find("POST /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests")
	g.Expect(create.Body).To(HaveKeyWithValue("title", "Draft: apps/web: image of Deployment/web"),
		"GitLab reads the Draft: prefix as a draft merge request")
	g.Expect(create.Body).To(HaveKeyWithValue("source_branch", "reflux/apps-web/needs-decision-0123456789ab"))
	g.Expect(create.Body).To(HaveKeyWithValue("target_branch", "main"))
	users, _ := rec.find("GET /api/v4/users")
	g.Expect(users.Query).To(ContainSubstring("username=alice"))
	put, _ := rec.find("PUT /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests/9")
	g.Expect(put.Body).To(HaveKeyWithValue("add_labels", "reflux,needs-decision,severity/high"))
	g.Expect(put.Body).To(HaveKeyWithValue("reviewer_ids", ConsistOf(41.0)))
	g.Expect(put.Body).To(HaveKeyWithValue("assignee_ids", ConsistOf(41.0)))
}

func TestForgeAnswerQuoted(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"message":"401 Unauthorized"}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	c, err := New(context.Background(), Options{Provider: "gitlab", Token: "bad", APIURL: srv.URL,
		RepoURL: "https://gl.example/acme/fleet.git"})
	g.Expect(err).ToNot(HaveOccurred())
	err = c.Check(context.Background())
	g.Expect(err).To(HaveOccurred())
	g.Expect(Unauthorized(err)).To(BeTrue(), "err: %v", err)
	g.Expect(strings.Contains(err.Error(), "401")).To(BeTrue(), "the forge's answer is quoted: %v", err)
}

func TestOwnerRepo(t *testing.T) {
	for _, tt := range []struct{ url, owner, repo string }{
		{"https://github.com/acme/fleet.git", "acme", "fleet"},
		{"http://127.0.0.1:3000/reflux/fleet", "reflux", "fleet"},
		{"ssh://git@gitlab.com/acme/platform/fleet.git", "acme/platform", "fleet"},
		{"git@github.com:acme/fleet.git", "acme", "fleet"},
	} {
		t.Run(tt.url, func(t *testing.T) {
			g := NewWithT(t)
			owner, repo, err := ownerRepo(tt.url)
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(owner).To(Equal(tt.owner))
			g.Expect(repo).To(Equal(tt.repo))
		})
	}
	_, _, err := ownerRepo("https://github.com/fleet")
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("names no owner/repository")))
}

// recordingClient returns a Client of provider (github or gitlab) whose
// requests rec answers. The GitHub client reaches only https hosts.
func recordingClient(t *testing.T, provider string, rec *recorder) *Client {
	t.Helper()
	opts := Options{Provider: provider, Token: "t"}
	var srv *httptest.Server
	switch provider {
	case "github":
		srv = httptest.NewTLSServer(rec)
		opts.RepoURL, opts.Transport = "https://gh.example/acme/fleet.git", srv.Client().Transport
	case "gitlab":
		srv = httptest.NewServer(rec)
		opts.RepoURL = "https://gl.example/acme/platform/fleet.git"
	}
	t.Cleanup(srv.Close)
	opts.APIURL = srv.URL
	c, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("connecting to the recording %s: %v", provider, err)
	}
	return c
}
