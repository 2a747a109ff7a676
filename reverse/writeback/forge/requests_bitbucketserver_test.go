package forge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

// Bitbucket Server (Data Center) REST 1.0, as its documentation says it
// answers. Only Gitea runs for real in the test environment.
const (
	bbsPulls = "/rest/api/1.0/projects/PLAT/repos/fleet/pull-requests"
	bbsList  = "GET " + bbsPulls
	bbsOpen  = "POST " + bbsPulls
	bbsGet3  = "GET " + bbsPulls + "/3"
	bbsPut3  = "PUT " + bbsPulls + "/3"
)

// bbsClient is a Client of a recording Bitbucket Server at an HTTP clone
// URL, /scm/PROJECT/repo.git.
func bbsClient(t *testing.T, rec *recorder, token string) *Client {
	t.Helper()
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	c, err := New(context.Background(), Options{Provider: "bitbucketserver", Token: token, APIURL: srv.URL,
		RepoURL: "https://bitbucket.example/scm/PLAT/fleet.git"})
	if err != nil {
		t.Fatalf("connecting to the recording Bitbucket Server: %v", err)
	}
	return c
}

// apiKeys leaves out the client's one request for rate-limit headers.
func apiKeys(rec *recorder) []string {
	var out []string
	for _, k := range rec.keys() {
		if k != "GET /" {
			out = append(out, k)
		}
	}
	return out
}

func TestBitbucketServerRequests(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		bbsList: `{"values":[],"isLastPage":true}`,
		bbsOpen: `{"id":12,"version":0,"state":"OPEN","title":"apps/web: image of Deployment/web",
			"links":{"self":[{"href":"https://bitbucket.example/projects/PLAT/repos/fleet/pull-requests/12"}]}}`,
		"GET " + bbsPulls + "/12": `{"id":12,"version":0,"reviewers":[{"user":{"name":"alice"}}]}`,
	}}
	c := bbsClient(t, rec, "bbs-http-token")
	res, err := c.Ensure(context.Background(), alertRequest())
	g.Expect(err).ToNot(HaveOccurred(), "calls: %v", rec.seen())
	g.Expect(res.Created).To(BeTrue())
	g.Expect(res.Number).To(Equal(12))
	g.Expect(res.URL).To(Equal("https://bitbucket.example/projects/PLAT/repos/fleet/pull-requests/12"))
	g.Expect(apiKeys(rec)).To(Equal([]string{bbsList, bbsOpen, "GET " + bbsPulls + "/12"}),
		"no label or assignee requests: Bitbucket Server has neither; alice is a reviewer already")

	list, _ := rec.find(bbsList)
	g.Expect(list.Query).To(ContainSubstring("state=ALL"))
	g.Expect(list.Query).To(ContainSubstring("direction=OUTGOING"))
	g.Expect(list.Query).To(ContainSubstring("at=refs%2Fheads%2Freflux%2Fapps-web%2Fneeds-decision-0123456789ab"))
	g.Expect(list.Auth).To(Equal("Bearer bbs-http-token"))
	create, _ := rec.find(bbsOpen)
	g.Expect(create.Body).To(HaveKeyWithValue("title", "apps/web: image of Deployment/web"), "no draft mark in the title")
	g.Expect(create.Body).To(HaveKeyWithValue("description", "| object | pointer |"))
	g.Expect(create.Body).To(HaveKeyWithValue("draft", true), "an Alert is a draft (Bitbucket Server 8.18 and later)")
	g.Expect(create.Body).To(HaveKeyWithValue("fromRef", HaveKeyWithValue("id", "refs/heads/reflux/apps-web/needs-decision-0123456789ab")))
	g.Expect(create.Body).To(HaveKeyWithValue("toRef", HaveKeyWithValue("id", "refs/heads/main")))
	g.Expect(create.Body).To(HaveKeyWithValue("reviewers", ConsistOf(HaveKeyWithValue("user", HaveKeyWithValue("name", "alice")))))
}

// TestBitbucketServerAddsMissingReviewers: a reviewer the server did not
// take at creation is added as a participant.
func TestBitbucketServerAddsMissingReviewers(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		bbsList:                                 `{"values":[]}`,
		bbsOpen:                                 `{"id":12,"version":0,"state":"OPEN"}`,
		"GET " + bbsPulls + "/12":               `{"id":12,"version":0,"reviewers":[]}`,
		"POST " + bbsPulls + "/12/participants": `{"user":{"name":"alice"},"role":"REVIEWER"}`,
	}}
	_, err := bbsClient(t, rec, "t").Ensure(context.Background(), alertRequest())
	g.Expect(err).ToNot(HaveOccurred())
	p, ok := rec.find("POST " + bbsPulls + "/12/participants")
	g.Expect(ok).To(BeTrue())
	g.Expect(p.Body).To(Equal(map[string]any{"user": map[string]any{"name": "alice"}, "role": "REVIEWER"}))
}

// TestBitbucketServerReusesOpenPullRequest: the open pull request of the
// head is updated at its version, its reviewers kept; labels are not
// asked for on every pass.
func TestBitbucketServerReusesOpenPullRequest(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		bbsList: `{"values":[{"id":3,"version":5,"state":"OPEN","title":"old","description":"old body",
			"fromRef":{"id":"refs/heads/reflux/apps-web/0123456789ab","displayId":"reflux/apps-web/0123456789ab","latestCommit":"abc123"}}]}`,
		bbsGet3: `{"id":3,"version":5,"reviewers":[{"user":{"name":"alice"},"role":"REVIEWER"}]}`,
		bbsPut3: `{"id":3,"version":6}`,
	}}
	req := Request{Head: "reflux/apps-web/0123456789ab", Base: "main", Title: "new", Body: "new body",
		Labels: []string{"reflux", "severity/low"}, Exclusive: []string{"severity/"}}
	res, err := bbsClient(t, rec, "user:t").Ensure(context.Background(), req)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(res.Created).To(BeFalse())
	g.Expect(res.Updated).To(BeTrue())
	g.Expect(res.HeadCommit).To(Equal("abc123"))
	g.Expect(apiKeys(rec)).To(Equal([]string{bbsList, bbsGet3, bbsPut3}))
	put, _ := rec.find(bbsPut3)
	g.Expect(put.Body).To(HaveKeyWithValue("version", 5.0))
	g.Expect(put.Body).To(HaveKeyWithValue("title", "new"))
	g.Expect(put.Body).To(HaveKeyWithValue("description", "new body"))
	g.Expect(put.Body).To(HaveKeyWithValue("reviewers", ConsistOf(HaveKeyWithValue("user", HaveKeyWithValue("name", "alice")))),
		"an update without the reviewers would drop them")

	// Nothing changed: nothing is sent but the lookup.
	rec2 := &recorder{answers: map[string]string{
		bbsList: `{"values":[{"id":3,"version":6,"state":"OPEN","title":"new","description":"new body",
			"fromRef":{"displayId":"reflux/apps-web/0123456789ab"}}]}`,
	}}
	res, err = bbsClient(t, rec2, "t").Ensure(context.Background(), req)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(res.Updated).To(BeFalse())
	g.Expect(apiKeys(rec2)).To(Equal([]string{bbsList}))
}

func TestBitbucketServerStates(t *testing.T) {
	for _, tt := range []struct {
		state string
		want  State
	}{{"OPEN", Open}, {"MERGED", Merged}, {"DECLINED", Closed}} {
		t.Run(tt.state, func(t *testing.T) {
			g := NewWithT(t)
			rec := &recorder{answers: map[string]string{bbsList: `{"values":[
				{"id":2,"state":"DECLINED","fromRef":{"displayId":"reflux/a/b"}},
				{"id":4,"state":"` + tt.state + `","fromRef":{"displayId":"reflux/a/b","latestCommit":"c4"}},
				{"id":9,"state":"OPEN","fromRef":{"displayId":"reflux/other"}}]}`}}
			pr, ok, err := bbsClient(t, rec, "t").Find(context.Background(), "reflux/a/b")
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(ok).To(BeTrue())
			g.Expect(pr.Number).To(Equal(4), "the newest pull request of the head")
			g.Expect(pr.State).To(Equal(tt.want))
			g.Expect(pr.HeadCommit).To(Equal("c4"))
		})
	}
}

func TestBitbucketServerCloseRequests(t *testing.T) {
	const (
		comment = "POST " + bbsPulls + "/3/comments"
		decline = "POST " + bbsPulls + "/3/decline"
	)
	tests := []struct {
		name  string
		list  string
		want  State
		calls []string
	}{
		{"open: commented on, then declined at its version", `{"values":[{"id":3,"version":7,"state":"OPEN","fromRef":{"displayId":"reflux/a/b"}}]}`,
			Closed, []string{bbsList, comment, bbsGet3, decline}},
		{"declined already: left alone", `{"values":[{"id":3,"state":"DECLINED","fromRef":{"displayId":"reflux/a/b"}}]}`,
			Closed, []string{bbsList}},
		{"merged: left alone", `{"values":[{"id":3,"state":"MERGED","fromRef":{"displayId":"reflux/a/b"}}]}`,
			Merged, []string{bbsList}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := &recorder{answers: map[string]string{bbsList: tt.list, comment: `{"id":1}`,
				bbsGet3: `{"id":3,"version":7}`, decline: `{"id":3,"state":"DECLINED"}`}}
			pr, err := bbsClient(t, rec, "t").Close(context.Background(), "reflux/a/b", closeNote)
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(pr.State).To(Equal(tt.want))
			g.Expect(apiKeys(rec)).To(Equal(tt.calls))
			if c, ok := rec.find(comment); ok {
				g.Expect(c.Body).To(Equal(map[string]any{"text": closeNote}))
			}
			if c, ok := rec.find(decline); ok {
				g.Expect(c.Query).To(Equal("version=7"))
			}
		})
	}
}

// TestBitbucketServerErrors: the stash client answers a 404 and a 400
// without an error; reflux reports them, with the status, as any forge's.
func TestBitbucketServerErrors(t *testing.T) {
	g := NewWithT(t)
	_, err := New(context.Background(), Options{Provider: "bitbucketserver", Token: "t", RepoURL: "https://b.example/scm/P/r.git"})
	g.Expect(err).To(MatchError(ContainSubstring("pullRequest.apiURL is required for Bitbucket Server")))
	_, err = New(context.Background(), Options{Provider: "bitbucketserver", Token: "user:", APIURL: "https://b.example",
		RepoURL: "https://b.example/scm/P/r.git"})
	g.Expect(err).To(MatchError(ContainSubstring("must be TOKEN or USERNAME:TOKEN")))

	for _, code := range []int{http.StatusNotFound, http.StatusBadRequest, http.StatusUnauthorized} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"errors":[{"message":"refused"}]}`, code)
		}))
		c, err := New(context.Background(), Options{Provider: "bitbucketserver", Token: "t", APIURL: srv.URL,
			RepoURL: "ssh://git@bitbucket.example:7999/plat/fleet.git"})
		g.Expect(err).ToNot(HaveOccurred())
		_, _, err = c.Find(context.Background(), "reflux/a/b")
		g.Expect(err).To(HaveOccurred(), "status %d", code)
		g.Expect(StatusCode(err)).To(Equal(code))
		g.Expect(Unauthorized(err)).To(Equal(code == http.StatusUnauthorized))
		srv.Close()
	}
}
