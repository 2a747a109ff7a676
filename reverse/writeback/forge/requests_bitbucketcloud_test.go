package forge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
)

// Bitbucket Cloud REST 2.0, as its documentation says it answers. Only
// Gitea runs for real in the test environment.
const (
	bbcPulls = "/2.0/repositories/acme/fleet/pullrequests"
	bbcList  = "GET " + bbcPulls
	bbcOpen  = "POST " + bbcPulls
	bbcGet3  = "GET " + bbcPulls + "/3"
	bbcPut3  = "PUT " + bbcPulls + "/3"
)

// bbcClient is a Client of a recording Bitbucket Cloud.
func bbcClient(t *testing.T, rec *recorder, token string) *Client {
	t.Helper()
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	c, err := New(context.Background(), Options{Provider: "bitbucket", Token: token, APIURL: srv.URL + "/2.0",
		RepoURL: "https://bitbucket.org/acme/fleet.git"})
	if err != nil {
		t.Fatalf("connecting to the recording Bitbucket Cloud: %v", err)
	}
	return c
}

func TestBitbucketCloudRequests(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		bbcList: `{"values":[]}`,
		bbcOpen: `{"id":12,"state":"OPEN","title":"apps/web: image of Deployment/web",
			"links":{"html":{"href":"https://bitbucket.org/acme/fleet/pull-requests/12"}},
			"reviewers":[{"uuid":"{5c1d}"}]}`,
		"GET " + bbcPulls + "/12": `{"id":12,"title":"t","description":"b","reviewers":[{"uuid":"{5c1d}"}]}`,
	}}
	req := alertRequest()
	req.Reviewers = []string{"{5c1d}"}
	res, err := bbcClient(t, rec, "bbc-access-token").Ensure(context.Background(), req)
	g.Expect(err).ToNot(HaveOccurred(), "calls: %v", rec.seen())
	g.Expect(res.Created).To(BeTrue())
	g.Expect(res.Number).To(Equal(12))
	g.Expect(res.URL).To(Equal("https://bitbucket.org/acme/fleet/pull-requests/12"))
	g.Expect(rec.keys()).To(Equal([]string{bbcList, bbcOpen, "GET " + bbcPulls + "/12"}),
		"no label or assignee requests: Bitbucket Cloud has neither; the reviewer was taken at creation")

	list, _ := rec.find(bbcList)
	q, err := url.ParseQuery(list.Query)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(q["state"]).To(ConsistOf("OPEN", "MERGED", "DECLINED", "SUPERSEDED"), "every state, or a merged pull request is missed")
	g.Expect(q.Get("q")).To(Equal(`source.branch.name = "reflux/apps-web/needs-decision-0123456789ab"`))
	g.Expect(q.Get("sort")).To(Equal("-id"))
	g.Expect(list.Auth).To(Equal("Bearer bbc-access-token"))
	create, _ := rec.find(bbcOpen)
	g.Expect(create.Body).To(HaveKeyWithValue("title", "apps/web: image of Deployment/web"), "no draft mark in the title")
	g.Expect(create.Body).To(HaveKeyWithValue("description", "| object | pointer |"))
	g.Expect(create.Body).To(HaveKeyWithValue("draft", true))
	g.Expect(create.Body).To(HaveKeyWithValue("source", HaveKeyWithValue("branch", HaveKeyWithValue("name", "reflux/apps-web/needs-decision-0123456789ab"))))
	g.Expect(create.Body).To(HaveKeyWithValue("destination", HaveKeyWithValue("branch", HaveKeyWithValue("name", "main"))))
	g.Expect(create.Body).To(HaveKeyWithValue("reviewers", ConsistOf(HaveKeyWithValue("uuid", "{5c1d}"))))
}

// TestBitbucketCloudAppPassword: USERNAME:APP_PASSWORD is sent as basic
// auth; a malformed one is refused before any request.
func TestBitbucketCloudAppPassword(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{"GET /2.0/repositories/acme/fleet": `{"slug":"fleet"}`}}
	g.Expect(bbcClient(t, rec, "ci-bot:app-password").Check(context.Background())).To(Succeed())
	c, _ := rec.find("GET /2.0/repositories/acme/fleet")
	g.Expect(c.Auth).To(Equal("Basic Y2ktYm90OmFwcC1wYXNzd29yZA=="))
	_, err := New(context.Background(), Options{Provider: "bitbucket", Token: "ci-bot:", RepoURL: "https://bitbucket.org/acme/fleet.git"})
	g.Expect(err).To(MatchError(ContainSubstring("must be ACCESS_TOKEN or USERNAME:APP_PASSWORD")))
}

// TestBitbucketCloudReusesOpenPullRequest: the open pull request of the
// head is updated, its reviewers sent as they are (a PUT without them
// drops them), and a missing reviewer is added by account_id.
func TestBitbucketCloudReusesOpenPullRequest(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		bbcList: `{"values":[{"id":3,"state":"OPEN","title":"old","description":"old body",
			"source":{"branch":{"name":"reflux/apps-web/needs-decision-0123456789ab"}},"reviewers":[{"uuid":"{5c1d}"}]}]}`,
		bbcGet3: `{"id":3,"title":"old","description":"old body","reviewers":[{"uuid":"{5c1d}"}]}`,
		bbcPut3: `{"id":3}`,
	}}
	req := alertRequest()
	req.Reviewers = []string{"{5c1d}", "557058:bob"}
	res, err := bbcClient(t, rec, "t").Ensure(context.Background(), req)
	g.Expect(err).ToNot(HaveOccurred(), "calls: %v", rec.seen())
	g.Expect(res.Created).To(BeFalse())
	g.Expect(res.Updated).To(BeTrue())
	g.Expect(rec.keys()).To(Equal([]string{bbcList, bbcGet3, bbcPut3}), "a title or body change only: no reviewers asked on every pass")
	put, _ := rec.find(bbcPut3)
	g.Expect(put.Body).To(HaveKeyWithValue("title", "apps/web: image of Deployment/web"))
	g.Expect(put.Body).To(HaveKeyWithValue("reviewers", ConsistOf(HaveKeyWithValue("uuid", "{5c1d}"))), "the reviewers kept")

	// A decoration that never happened (no labels to tell by here) is
	// Client.create's: a new pull request's missing reviewer is added.
	rec = &recorder{answers: map[string]string{
		bbcList:                   `{"values":[]}`,
		bbcOpen:                   `{"id":12,"state":"OPEN"}`,
		"GET " + bbcPulls + "/12": `{"id":12,"title":"t","description":"b","reviewers":[{"uuid":"{5c1d}"}]}`,
		"PUT " + bbcPulls + "/12": `{"id":12}`,
	}}
	_, err = bbcClient(t, rec, "t").Ensure(context.Background(), req)
	g.Expect(err).ToNot(HaveOccurred())
	put, _ = rec.find("PUT " + bbcPulls + "/12")
	g.Expect(put.Body).To(HaveKeyWithValue("reviewers", ConsistOf(HaveKeyWithValue("uuid", "{5c1d}"), HaveKeyWithValue("account_id", "557058:bob"))))
	g.Expect(put.Body).To(HaveKeyWithValue("title", "t"), "the title as it is")
}

// TestBitbucketCloudStates: merged and declined (or superseded) pull
// requests are found and decided; a 12-digit head hash decides its own
// branch, not a later one of the same name.
func TestBitbucketCloudStates(t *testing.T) {
	for state, want := range map[string]State{"OPEN": Open, "MERGED": Merged, "DECLINED": Closed, "SUPERSEDED": Closed} {
		t.Run(state, func(t *testing.T) {
			g := NewWithT(t)
			rec := &recorder{answers: map[string]string{bbcList: `{"values":[{"id":3,"state":"` + state + `",
				"source":{"branch":{"name":"reflux/a/b"},"commit":{"hash":"0123456789ab"}}}]}`}}
			pr, ok, err := bbcClient(t, rec, "t").Find(context.Background(), "reflux/a/b")
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(ok).To(BeTrue())
			g.Expect(pr.State).To(Equal(want))
			g.Expect(pr.Stale("0123456789abcdef0123456789abcdef01234567")).To(BeFalse())
		})
	}
}

func TestBitbucketCloudCloseRequests(t *testing.T) {
	const (
		comment = "POST " + bbcPulls + "/3/comments"
		decline = "POST " + bbcPulls + "/3/decline"
	)
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		bbcList: `{"values":[{"id":3,"state":"OPEN","source":{"branch":{"name":"reflux/a/b"}}}]}`,
		comment: `{"id":1}`, decline: `{"id":3,"state":"DECLINED"}`}}
	pr, err := bbcClient(t, rec, "t").Close(context.Background(), "reflux/a/b", closeNote)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(pr.State).To(Equal(Closed))
	g.Expect(rec.keys()).To(Equal([]string{bbcList, comment, decline}))
	c, _ := rec.find(comment)
	g.Expect(c.Body).To(Equal(map[string]any{"content": map[string]any{"raw": closeNote}}))
}

// TestBitbucketCloudErrors: a refusal is reported with its status, as any
// forge's.
func TestBitbucketCloudErrors(t *testing.T) {
	g := NewWithT(t)
	for _, code := range []int{http.StatusNotFound, http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"type":"error","error":{"message":"refused"}}`, code)
		}))
		c, err := New(context.Background(), Options{Provider: "bitbucket", Token: "t", APIURL: srv.URL,
			RepoURL: "git@bitbucket.org:acme/fleet.git"})
		g.Expect(err).ToNot(HaveOccurred())
		_, _, err = c.Find(context.Background(), "reflux/a/b")
		g.Expect(err).To(MatchError(ContainSubstring("refused")), "status %d", code)
		g.Expect(StatusCode(err)).To(Equal(code))
		g.Expect(Unauthorized(err)).To(Equal(code == http.StatusUnauthorized || code == http.StatusForbidden))
		srv.Close()
	}
}
