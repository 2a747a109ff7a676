package forge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

// TestGitHubCheckReadsTheUsersRole: GitHub says the token user's role on
// the repository; only a user who may merely read is named read-only, as
// triage is all reflux needs of the token (labels, reviewers, closing).
func TestGitHubCheckReadsTheUsersRole(t *testing.T) {
	tests := []struct {
		name, repo string
		readOnly   bool
	}{
		{"pull only", `{"permissions":{"admin":false,"maintain":false,"push":false,"triage":false,"pull":true}}`, true},
		{"triage", `{"permissions":{"admin":false,"maintain":false,"push":false,"triage":true,"pull":true}}`, false},
		{"push", `{"permissions":{"admin":false,"push":true,"pull":true}}`, false},
		{"no permissions in the answer", `{"name":"fleet"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := recordingClient(t, "github", &recorder{answers: map[string]string{"GET /api/v3/repos/acme/fleet": tt.repo}})
			err := c.Check(context.Background())
			g.Expect(ReadOnly(err)).To(Equal(tt.readOnly), "err: %v", err)
			if !tt.readOnly {
				g.Expect(err).NotTo(HaveOccurred())
			}
		})
	}
}

// TestRefusedWriteIsReadOnly: a 403 to a write, after the token read the
// branch's pull requests, names the token read-only on every forge; a
// 403 that is GitHub throttling, or another refusal, does not.
func TestRefusedWriteIsReadOnly(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		status   int
		header   http.Header
		readOnly bool
	}{
		{"GitHub 403", "github", http.StatusForbidden, nil, true},
		{"GitHub secondary rate limit", "github", http.StatusForbidden, http.Header{"Retry-After": {"60"}}, false},
		{"GitHub 422", "github", http.StatusUnprocessableEntity, nil, false},
		{"GitLab 403", "gitlab", http.StatusForbidden, nil, true},
		{"GitLab 409", "gitlab", http.StatusConflict, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := &recorder{answers: map[string]string{
				"GET /api/v3/repos/acme/fleet/pulls":                          `[]`,
				"GET /api/v3/repos/acme/fleet":                                `{"name":"fleet"}`,
				"GET /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests": `[]`,
				"GET /api/v4/projects/acme%2Fplatform%2Ffleet":                `{"id":5,"name":"fleet","path_with_namespace":"acme/platform/fleet"}`,
			}}
			refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					rec.ServeHTTP(w, r)
					return
				}
				for k, v := range tt.header {
					w.Header()[k] = v
				}
				msg := `{"message":"Resource not accessible by personal access token"}`
				if tt.header != nil {
					msg = `{"message":"You have exceeded a secondary rate limit","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`
				}
				http.Error(w, msg, tt.status)
			})
			c := refusingClient(t, tt.provider, refuse)
			_, err := c.Ensure(context.Background(), Request{Head: "reflux/apps-web/0123456789ab", Base: "main", Title: "t", Body: "b"})
			g.Expect(err).To(MatchError(ContainSubstring("creating the pull request")), "refused at the write, after the read")
			g.Expect(ReadOnly(err)).To(Equal(tt.readOnly), "err: %v", err)
		})
	}
}

// refusingClient is recordingClient with any handler.
func refusingClient(t *testing.T, provider string, h http.Handler) *Client {
	t.Helper()
	opts := Options{Provider: provider, Token: "t"}
	var srv *httptest.Server
	switch provider {
	case "github":
		srv = httptest.NewTLSServer(h)
		opts.RepoURL, opts.Transport = "https://gh.example/acme/fleet.git", srv.Client().Transport
	case "gitlab":
		srv = httptest.NewServer(h)
		opts.RepoURL = "https://gl.example/acme/platform/fleet.git"
	}
	t.Cleanup(srv.Close)
	opts.APIURL = srv.URL
	c, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("connecting to the %s: %v", provider, err)
	}
	return c
}
