package forge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf16"

	. "github.com/onsi/gomega"
)

// Azure DevOps Services' REST API 7.1, as its documentation says it
// answers. Only Gitea runs for real in the test environment.
const (
	adoPulls   = "/acme/platform/_apis/git/repositories/fleet/pullRequests"
	adoList    = "GET " + adoPulls
	adoOpen    = "POST " + adoPulls
	adoGet3    = "GET " + adoPulls + "/3"
	adoPatch3  = "PATCH " + adoPulls + "/3"
	adoLabels3 = adoPulls + "/3/labels"
	adoHead    = "reflux/apps-web/needs-decision-0123456789ab"
	alice      = "5c1d0e6a-8f0b-4c4e-9a57-0b6f3c3e9a01"
	bob        = "9e2f4b7c-1a3d-4e5f-8a6b-7c8d9e0f1a2b"
)

// azureLocations is the part of the resource locations Azure DevOps
// answers OPTIONS {org}/_apis with that reflux's calls use: the client
// builds every URL from these route templates.
var azureLocations = []struct{ id, resource, route string }{
	{"225f7195-f9c7-4d14-ab28-a83f7ff77e1f", "repositories", "{project}/_apis/{area}/{resource}/{repositoryId}"},
	{"9946fd70-0d40-406e-b686-b4744cbbcc37", "pullRequests", "{project}/_apis/{area}/repositories/{repositoryId}/{resource}/{pullRequestId}"},
	{"f22387e3-984e-4c52-9c6d-fbb8f14c812d", "labels", "{project}/_apis/{area}/repositories/{repositoryId}/pullRequests/{pullRequestId}/{resource}/{labelIdOrName}"},
	{"4b6702c7-aa35-4b89-9c96-b9abf6d3e540", "reviewers", "{project}/_apis/{area}/repositories/{repositoryId}/pullRequests/{pullRequestId}/{resource}/{reviewerId}"},
	{"ab6e2e5d-a0b7-4153-b64a-a4efe0d49449", "threads", "{project}/_apis/{area}/repositories/{repositoryId}/pullRequests/{pullRequestId}/{resource}/{threadId}"},
}

// azureFake answers the route discovery at OPTIONS /acme/_apis and hands
// every other request to rec.
type azureFake struct {
	rec        *recorder
	discovered atomic.Int32
}

func (f *azureFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodOptions || r.URL.Path != "/acme/_apis" {
		f.rec.ServeHTTP(w, r)
		return
	}
	f.discovered.Add(1)
	var value []map[string]any
	for _, l := range azureLocations {
		value = append(value, map[string]any{"id": l.id, "area": "git", "resourceName": l.resource, "routeTemplate": l.route,
			"resourceVersion": 1, "minVersion": "3.0", "maxVersion": "7.2", "releasedVersion": "7.1"})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"count": len(value), "value": value})
}

// adoClient is a Client of a recording Azure DevOps organisation acme.
func adoClient(t *testing.T, rec *recorder) (*Client, *azureFake) {
	t.Helper()
	fake := &azureFake{rec: rec}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c, err := New(context.Background(), Options{Provider: "azuredevops", Token: "ado-pat", APIURL: srv.URL + "/acme",
		RepoURL: "https://acme@dev.azure.com/acme/platform/_git/fleet"})
	if err != nil {
		t.Fatalf("connecting to the recording Azure DevOps: %v", err)
	}
	return c, fake
}

func TestAzureDevOpsRequests(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		adoList:                           `{"count":0,"value":[]}`,
		adoOpen:                           `{"pullRequestId":12,"status":"active","title":"apps/web: image of Deployment/web","isDraft":true}`,
		"GET " + adoPulls + "/12":         `{"pullRequestId":12,"status":"active","reviewers":[{"id":"` + alice + `","vote":0}]}`,
		"POST " + adoPulls + "/12/labels": `{"id":"0d0c5a3e-0000-4000-8000-000000000001","name":"x","active":true}`,
	}}
	req := alertRequest()
	req.Reviewers = []string{alice}
	c, fake := adoClient(t, rec)
	res, err := c.Ensure(context.Background(), req)
	g.Expect(err).ToNot(HaveOccurred(), "calls: %v", rec.seen())
	g.Expect(res.Created).To(BeTrue())
	g.Expect(res.Number).To(Equal(12))
	g.Expect(res.URL).To(HaveSuffix("/acme/platform/_git/fleet/pullrequest/12"))
	g.Expect(res.Labels).To(Equal(req.Labels))
	label := "POST " + adoPulls + "/12/labels"
	g.Expect(rec.keys()).To(Equal([]string{adoList, adoOpen, "GET " + adoPulls + "/12", label, label, label}),
		"the reviewer was taken at creation: not sent again; no assignee request, Azure DevOps has none")
	g.Expect(fake.discovered.Load()).To(BeEquivalentTo(1), "the routes are read once per organisation")

	list, _ := rec.find(adoList)
	q, err := url.ParseQuery(list.Query)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(q.Get("searchCriteria.status")).To(Equal("all"), "every status, or a completed pull request is missed")
	g.Expect(q.Get("searchCriteria.sourceRefName")).To(Equal("refs/heads/" + adoHead))
	g.Expect(list.Auth).To(Equal("Basic OmFkby1wYXQ="), "the PAT as basic auth with an empty user")
	create, _ := rec.find(adoOpen)
	g.Expect(create.Body).To(HaveKeyWithValue("title", "apps/web: image of Deployment/web"), "no draft mark in the title")
	g.Expect(create.Body).To(HaveKeyWithValue("description", "| object | pointer |"))
	g.Expect(create.Body).To(HaveKeyWithValue("isDraft", true))
	g.Expect(create.Body).To(HaveKeyWithValue("sourceRefName", "refs/heads/"+adoHead))
	g.Expect(create.Body).To(HaveKeyWithValue("targetRefName", "refs/heads/main"))
	g.Expect(create.Body).To(HaveKeyWithValue("reviewers", ConsistOf(HaveKeyWithValue("id", alice))))
	var names []any
	for _, c := range rec.all(label) {
		names = append(names, c.Body["name"])
	}
	g.Expect(names).To(Equal([]any{"reflux", "needs-decision", "severity/high"}))
}

// TestAzureDevOpsAPIVersion: the client asks the version its calls were
// written for, as the route discovery allows.
func TestAzureDevOpsAPIVersion(t *testing.T) {
	g := NewWithT(t)
	var accept string
	rec := &recorder{answers: map[string]string{"GET /acme/platform/_apis/git/repositories/fleet": `{"id":"6f1c2b3a-4d5e-4f60-8a71-92b3c4d5e6f7","name":"fleet"}`}}
	fake := &azureFake{rec: rec}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			accept = r.Header.Get("Accept")
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := New(context.Background(), Options{Provider: "azuredevops", Token: "t", APIURL: srv.URL + "/acme",
		RepoURL: "git@ssh.dev.azure.com:v3/acme/platform/fleet"})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(c.Check(context.Background())).To(Succeed())
	g.Expect(accept).To(Equal("application/json;api-version=7.1-preview.1"))
}

// TestAzureDevOpsReusesOpenPullRequest: the list cuts descriptions to
// 400 characters, so the open pull request is read whole before its body
// is compared; a change sends the title and description only (a published
// draft stays published); stale labels go by id, a human's stay.
func TestAzureDevOpsReusesOpenPullRequest(t *testing.T) {
	long := strings.Repeat("| Deployment/web | /spec/replicas |\n", 20)
	tests := []struct {
		name   string
		title  string
		calls  []string
		labels []string
	}{
		{"the body as it is: nothing written", "t",
			[]string{adoList, adoGet3, "POST " + adoLabels3, "GET " + adoLabels3, "DELETE " + adoLabels3 + "/00000000-0000-4000-8000-00000000000c"},
			[]string{"reflux", "team/web", "severity/low"}},
		{"a new title: title and description patched", "new title",
			[]string{adoList, adoGet3, adoPatch3, "POST " + adoLabels3, "GET " + adoLabels3, "DELETE " + adoLabels3 + "/00000000-0000-4000-8000-00000000000c"},
			[]string{"reflux", "team/web", "severity/low"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			labels := `[{"id":"00000000-0000-4000-8000-00000000000a","name":"reflux","active":true},
				{"id":"00000000-0000-4000-8000-00000000000c","name":"severity/critical","active":true},
				{"id":"00000000-0000-4000-8000-00000000000d","name":"team/web","active":true}]`
			rec := &recorder{answers: map[string]string{
				adoList: `{"count":1,"value":[{"pullRequestId":3,"status":"active","title":"t","description":` +
					quote(long[:400]) + `,"sourceRefName":"refs/heads/reflux/a/b"}]}`,
				adoGet3: `{"pullRequestId":3,"status":"active","title":"t","description":` + quote(long) +
					`,"sourceRefName":"refs/heads/reflux/a/b","labels":` + labels + `}`,
				adoPatch3:            `{"pullRequestId":3}`,
				"POST " + adoLabels3: `{"name":"severity/low"}`,
				"GET " + adoLabels3:  `{"count":3,"value":` + labels + `}`,
				"DELETE " + adoLabels3 + "/00000000-0000-4000-8000-00000000000c": ``,
			}}
			c, _ := adoClient(t, rec)
			res, err := c.Ensure(context.Background(), Request{Head: "reflux/a/b", Base: "main", Title: tt.title, Body: long,
				Labels: []string{"reflux", "severity/low"}, Exclusive: exclusive, Draft: true})
			g.Expect(err).ToNot(HaveOccurred(), "calls: %v", rec.seen())
			g.Expect(res.Created).To(BeFalse())
			g.Expect(rec.keys()).To(Equal(tt.calls), "team/web is a human's: never removed")
			g.Expect(res.Labels).To(ConsistOf(tt.labels))
			if patch, ok := rec.find(adoPatch3); ok {
				g.Expect(patch.Body).To(Equal(map[string]any{"title": "new title", "description": long}))
			}
		})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAzureDevOpsClipsLongBody: Azure DevOps refuses a description over
// 4,000 UTF-16 characters, so a longer body is cut at a line's end with a
// note, and the cut body, once on the forge, is not written again.
func TestAzureDevOpsClipsLongBody(t *testing.T) {
	g := NewWithT(t)
	// Each rocket is two UTF-16 units: counted as one, the cut is too long.
	row := "| Deployment/web | " + strings.Repeat("🚀", 20) + " |\n"
	body := strings.Repeat(row, 100)
	rec := &recorder{answers: map[string]string{adoList: `{"count":0,"value":[]}`, adoOpen: `{"pullRequestId":3,"status":"active"}`}}
	c, _ := adoClient(t, rec)
	_, err := c.Ensure(context.Background(), Request{Head: "reflux/a/b", Base: "main", Title: "t", Body: body})
	g.Expect(err).ToNot(HaveOccurred(), "calls: %v", rec.seen())
	create, _ := rec.find(adoOpen)
	sent, _ := create.Body["description"].(string)
	g.Expect(len(utf16.Encode([]rune(sent)))).To(BeNumerically("<=", 4000))
	g.Expect(sent).To(HaveSuffix(azureClipNote))
	g.Expect(strings.TrimSuffix(sent, azureClipNote)).To(HaveSuffix("🚀 |"), "cut at a line's end")
	g.Expect(body).To(HavePrefix(strings.TrimSuffix(sent, azureClipNote)))

	rec = &recorder{answers: map[string]string{
		adoList: `{"count":1,"value":[{"pullRequestId":3,"status":"active","sourceRefName":"refs/heads/reflux/a/b"}]}`,
		adoGet3: `{"pullRequestId":3,"status":"active","title":"t","description":` + quote(sent) + `}`,
	}}
	c, _ = adoClient(t, rec)
	res, err := c.Ensure(context.Background(), Request{Head: "reflux/a/b", Base: "main", Title: "t", Body: body})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(res.Updated).To(BeFalse())
	g.Expect(rec.keys()).To(Equal([]string{adoList, adoGet3}), "the cut body is the one the forge holds")
}

// TestAzureDevOpsReviewers: a pull request whose decoration failed gets
// the reviewers it lacks, and only those; a reviewer named otherwise
// than by identity id is refused before anything is sent.
func TestAzureDevOpsReviewers(t *testing.T) {
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		adoList: `{"count":1,"value":[{"pullRequestId":3,"status":"active","sourceRefName":"refs/heads/reflux/a/b"}]}`,
		adoGet3: `{"pullRequestId":3,"status":"active","title":"t","description":"b","reviewers":[{"id":"` +
			strings.ToUpper(alice) + `","vote":10}]}`,
		"POST " + adoPulls + "/3/reviewers": `{"count":1,"value":[{"id":"` + bob + `"}]}`,
		"POST " + adoLabels3:                `{"name":"reflux"}`,
	}}
	c, _ := adoClient(t, rec)
	req := Request{Head: "reflux/a/b", Base: "main", Title: "t", Body: "b", Labels: []string{"reflux"}, Reviewers: []string{alice, bob}}
	_, err := c.Ensure(context.Background(), req)
	g.Expect(err).ToNot(HaveOccurred(), "calls: %v", rec.seen())
	g.Expect(rec.keys()).To(Equal([]string{adoList, adoGet3, adoGet3, "POST " + adoPulls + "/3/reviewers", "POST " + adoLabels3}))
	add, _ := rec.find("POST " + adoPulls + "/3/reviewers")
	g.Expect(add.List).To(Equal([]any{map[string]any{"id": bob}}), "alice voted already: her vote is hers")

	rec = &recorder{answers: map[string]string{adoList: `{"count":0,"value":[]}`}}
	c, _ = adoClient(t, rec)
	req.Reviewers = []string{"alice@example.com"}
	_, err = c.Ensure(context.Background(), req)
	g.Expect(err).To(MatchError(ContainSubstring(`reviewer "alice@example.com" is no Azure DevOps identity id`)))
	g.Expect(rec.keys()).To(Equal([]string{adoList}))
}

// TestAzureDevOpsStates: completed and abandoned pull requests are found
// and decided with their last merge source commit; of several, the
// newest decides.
func TestAzureDevOpsStates(t *testing.T) {
	const head = "0123456789abcdef0123456789abcdef01234567"
	for status, want := range map[string]State{"completed": Merged, "abandoned": Closed} {
		t.Run(status, func(t *testing.T) {
			g := NewWithT(t)
			rec := &recorder{answers: map[string]string{adoList: `{"count":2,"value":[
				{"pullRequestId":9,"status":"` + status + `","sourceRefName":"refs/heads/reflux/a/b","lastMergeSourceCommit":{"commitId":"` + head + `"}},
				{"pullRequestId":4,"status":"abandoned","sourceRefName":"refs/heads/reflux/a/b","lastMergeSourceCommit":{"commitId":"fedcba98"}}]}`}}
			c, _ := adoClient(t, rec)
			pr, ok, err := c.Find(context.Background(), "reflux/a/b")
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(ok).To(BeTrue())
			g.Expect(pr.Number).To(Equal(9))
			g.Expect(pr.State).To(Equal(want))
			g.Expect(pr.HeadCommit).To(Equal(head))
			g.Expect(pr.Stale(head)).To(BeFalse())
			g.Expect(pr.Stale("fedcba9876543210fedcba9876543210fedcba98")).To(BeTrue())
			g.Expect(rec.keys()).To(Equal([]string{adoList}), "a decided pull request is not read again")
		})
	}
}

func TestAzureDevOpsCloseRequests(t *testing.T) {
	const thread = "POST " + adoPulls + "/3/threads"
	g := NewWithT(t)
	rec := &recorder{answers: map[string]string{
		adoList:   `{"count":1,"value":[{"pullRequestId":3,"status":"active","sourceRefName":"refs/heads/reflux/a/b"}]}`,
		adoGet3:   `{"pullRequestId":3,"status":"active","sourceRefName":"refs/heads/reflux/a/b"}`,
		thread:    `{"id":1}`,
		adoPatch3: `{"pullRequestId":3,"status":"abandoned"}`,
	}}
	c, _ := adoClient(t, rec)
	pr, err := c.Close(context.Background(), "reflux/a/b", closeNote)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(pr.State).To(Equal(Closed))
	g.Expect(rec.keys()).To(Equal([]string{adoList, adoGet3, thread, adoPatch3}))
	th, _ := rec.find(thread)
	g.Expect(th.Body).To(Equal(map[string]any{"comments": []any{map[string]any{"content": closeNote, "commentType": "text"}}}),
		"no thread status: a note, not an active thread a policy waits on")
	patch, _ := rec.find(adoPatch3)
	g.Expect(patch.Body).To(Equal(map[string]any{"status": "abandoned"}))
}

// TestAzureDevOpsErrors: a refusal keeps its status whatever its body,
// whether at the route discovery or at a call.
func TestAzureDevOpsErrors(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		code                    int
		discovery               bool
	}{
		{"a token refused at discovery, HTML page", "text/html", "<html>sign in</html>", http.StatusUnauthorized, true},
		{"a token refused at discovery, no body", "", "", http.StatusUnauthorized, true},
		{"no such repository", "application/json", `{"message":"TF401019: repository fleet does not exist","typeKey":"GitRepositoryNotFoundException"}`, http.StatusNotFound, false},
		{"forbidden", "application/json", `{"message":"TF401027: You need the Git 'PullRequestContribute' permission"}`, http.StatusForbidden, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fake := &azureFake{rec: &recorder{}}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodOptions && !tt.discovery {
					fake.ServeHTTP(w, r)
					return
				}
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				w.WriteHeader(tt.code)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, err := New(context.Background(), Options{Provider: "azuredevops", Token: "t", APIURL: srv.URL + "/acme",
				RepoURL: "https://dev.azure.com/acme/platform/_git/fleet"})
			g.Expect(err).ToNot(HaveOccurred())
			_, _, err = c.Find(context.Background(), "reflux/a/b")
			g.Expect(err).To(HaveOccurred())
			g.Expect(StatusCode(err)).To(Equal(tt.code), "error: %v", err)
			g.Expect(Unauthorized(err)).To(Equal(tt.code == http.StatusUnauthorized || tt.code == http.StatusForbidden))
			if tt.body != "" && tt.contentType == "application/json" {
				g.Expect(err).To(MatchError(ContainSubstring("TF4010")), "the forge's message is quoted")
			}
		})
	}
}

func TestAzureRepo(t *testing.T) {
	tests := []struct {
		raw, apiURL string
		want        azureLocation
		err         string
	}{
		{raw: "https://dev.azure.com/acme/platform/_git/fleet", want: azureLocation{"https://dev.azure.com/acme", "platform", "fleet"}},
		{raw: "https://acme@dev.azure.com/acme/Platform%20Team/_git/fleet", want: azureLocation{"https://dev.azure.com/acme", "Platform Team", "fleet"}},
		{raw: "https://dev.azure.com/acme/_git/fleet", want: azureLocation{"https://dev.azure.com/acme", "fleet", "fleet"}},
		{raw: "git@ssh.dev.azure.com:v3/acme/platform/fleet", want: azureLocation{"https://dev.azure.com/acme", "platform", "fleet"}},
		{raw: "ssh://git@ssh.dev.azure.com/v3/acme/platform/fleet", want: azureLocation{"https://dev.azure.com/acme", "platform", "fleet"}},
		{raw: "https://acme.visualstudio.com/platform/_git/fleet", want: azureLocation{"https://acme.visualstudio.com", "platform", "fleet"}},
		{raw: "https://acme.visualstudio.com/DefaultCollection/platform/_git/fleet",
			want: azureLocation{"https://acme.visualstudio.com/DefaultCollection", "platform", "fleet"}},
		{raw: "https://ado.example/tfs/DefaultCollection/platform/_git/fleet", apiURL: "https://ado.example/tfs/DefaultCollection/",
			want: azureLocation{"https://ado.example/tfs/DefaultCollection", "platform", "fleet"}},
		{raw: "ssh://ado.example:22/tfs/DefaultCollection/_git/fleet", apiURL: "https://ado.example/tfs/DefaultCollection",
			want: azureLocation{"https://ado.example/tfs/DefaultCollection", "fleet", "fleet"}},
		{raw: "https://ado.example/tfs/DefaultCollection/platform/_git/fleet", err: "apiURL must name the Azure DevOps Server collection"},
		{raw: "https://dev.azure.com/acme/platform/fleet.git", err: "no Azure DevOps repository"},
		{raw: "https://dev.azure.com/acme/a/b/_git/fleet", err: "no PROJECT/_git/REPO below the organisation"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			g := NewWithT(t)
			got, err := azureRepo(tt.raw, tt.apiURL)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
