package forge

import (
	"context"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

// TestForgejoSpeaksGitea: Forgejo serves Gitea's API under a version of
// its own ("11.0.1+gitea-1.22.0"), which the Gitea SDK reads as it
// connects and compares before some requests. provider: gitea opens,
// labels and reviews a pull request there as on Gitea (Gitea itself runs
// for real in gitea_test.go).
func TestForgejoSpeaksGitea(t *testing.T) {
	g := NewWithT(t)
	const repo = "/api/v1/repos/acme/fleet"
	rec := &recorder{answers: map[string]string{
		"GET /api/v1/version":                           `{"version":"11.0.1+gitea-1.22.0"}`,
		"GET " + repo:                                   `{"id":1,"name":"fleet","full_name":"acme/fleet","owner":{"login":"acme"}}`,
		"POST " + repo + "/pulls":                       `{"number":5,"html_url":"https://forgejo.example/acme/fleet/pulls/5","state":"open"}`,
		"GET " + repo + "/labels":                       `[{"id":1,"name":"reflux"}]`,
		"POST " + repo + "/labels":                      `{"id":2,"name":"x"}`,
		"POST " + repo + "/issues/5/labels":             `[]`,
		"PATCH " + repo + "/issues/5":                   `{"number":5}`,
		"POST " + repo + "/pulls/5/requested_reviewers": `[]`,
		"GET " + repo + "/pulls":                        `[]`,
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := New(context.Background(), Options{Provider: "gitea", Token: "forgejo-token", APIURL: srv.URL,
		RepoURL: "https://forgejo.example/acme/fleet.git"})
	g.Expect(err).ToNot(HaveOccurred())
	res, err := c.Ensure(context.Background(), alertRequest())
	g.Expect(err).ToNot(HaveOccurred(), "calls: %v", rec.seen())
	g.Expect(res.Created).To(BeTrue())
	g.Expect(res.URL).To(Equal("https://forgejo.example/acme/fleet/pulls/5"))
	// The branch's pull request is asked by base and head, which the SDK
	// sends only to a server of 1.22 or later; unanswered here, it is 404:
	// none into main, and no open one into another branch either.
	_, asked := rec.find("GET " + repo + "/pulls/main/reflux/apps-web/needs-decision-0123456789ab")
	g.Expect(asked).To(BeTrue(), "calls: %v", rec.keys())
	create, _ := rec.find("POST " + repo + "/pulls")
	g.Expect(create.Body).To(HaveKeyWithValue("title", "WIP: apps/web: image of Deployment/web"), "a draft is WIP: as on Gitea")
	g.Expect(create.Body).To(HaveKeyWithValue("head", "reflux/apps-web/needs-decision-0123456789ab"))
	rev, ok := rec.find("POST " + repo + "/pulls/5/requested_reviewers")
	g.Expect(ok).To(BeTrue(), "the review request is sent: the SDK's version check passes")
	g.Expect(rev.Body).To(HaveKeyWithValue("reviewers", ConsistOf("alice")))
}

// TestGiteaBefore122FindsByWalking: the SDK refuses the base-and-head
// lookup on a server older than 1.22, so find walks the pull requests
// there, as it did before.
func TestGiteaBefore122FindsByWalking(t *testing.T) {
	g := NewWithT(t)
	const repo = "/api/v1/repos/acme/fleet"
	rec := &recorder{answers: map[string]string{
		"GET /api/v1/version": `{"version":"1.21.11"}`,
		"GET " + repo:         `{"id":1,"name":"fleet","full_name":"acme/fleet","owner":{"login":"acme"},"default_branch":"main"}`,
		"GET " + repo + "/pulls": `[{"number":7,"state":"open","html_url":"https://gitea.example/acme/fleet/pulls/7",` +
			`"head":{"label":"reflux/apps-web/x","ref":"reflux/apps-web/x"},"base":{"ref":"main"}}]`,
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := New(context.Background(), Options{Provider: "gitea", Token: "t", APIURL: srv.URL,
		RepoURL: "https://gitea.example/acme/fleet.git", Base: "main"})
	g.Expect(err).ToNot(HaveOccurred())
	pr, ok, err := c.Find(context.Background(), "reflux/apps-web/x")
	g.Expect(err).ToNot(HaveOccurred(), "calls: %v", rec.keys())
	g.Expect(ok).To(BeTrue())
	g.Expect(pr.Number).To(Equal(7))
	_, asked := rec.find("GET " + repo + "/pulls/main/reflux/apps-web/x")
	g.Expect(asked).To(BeFalse(), "never sent to a server that lacks it")
}
