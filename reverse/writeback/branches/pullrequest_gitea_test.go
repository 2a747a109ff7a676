package branches

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

// giteaShop serves testdata/shop from a real Gitea and returns a drift
// set over it whose policy opens pull requests there.
func giteaShop(t *testing.T) (*testenv.Gitea, reverse.DriftSet) {
	t.Helper()
	ctx := context.Background()
	gt, err := testenv.StartGitea(ctx, testenv.GiteaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := gt.Process.Log(); err == nil {
				t.Logf("gitea log (tail):\n%s", tail(b, 8<<10))
			}
		}
		_ = gt.Stop() // a stop error changes no result
	})
	url, _, err := gt.PushDir(ctx, "shop", "testdata/shop")
	if err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Eventually(func() error {
		return gt.API(ctx, http.MethodGet, "/repos/reflux/shop/branches/main", nil, nil)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	if err := gt.AddUser(ctx, "payments", "shop"); err != nil {
		t.Fatal(err)
	}
	set := shopSet(url)
	set.Source.AuthData = map[string][]byte{"username": []byte(gt.Username), "password": []byte(gt.Password)}
	set.Policy.Spec.Git.PullRequest = &refluxv1.PullRequestSpec{Provider: refluxv1.GiteaProvider, APIURL: gt.URL,
		Reviewers: []string{"payments"}}
	set.ForgeToken = gt.Token
	return gt, set
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

type apiPR struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  string `json:"state"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	Head struct {
		Label string `json:"label"`
	} `json:"head"`
}

func (p apiPR) labels() []string {
	var out []string
	for _, l := range p.Labels {
		out = append(out, l.Name)
	}
	return out
}

// TestWritePullRequestsOnGitea: each pushed branch gets one pull request,
// a second writer (a restart) reuses them, and the forge's answers on merge
// and close drive what Check reports.
func TestWritePullRequestsOnGitea(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gt, set := giteaShop(t)

	results, err := newWriter(t).Write(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(results).To(HaveLen(2))
	merge, alert := results[0], results[1]
	g.Expect(merge.Outcome).To(Equal(refluxv1.BranchPushedReason), merge.Reason)
	g.Expect(merge.PullRequest).To(HavePrefix(gt.URL + "/reflux/shop/pulls/"))
	g.Expect(merge.Reason).To(ContainSubstring("pull request " + merge.PullRequest + " opened"))
	g.Expect(alert.PullRequest).NotTo(BeEmpty())

	var prs []apiPR
	g.Expect(gt.API(ctx, http.MethodGet, "/repos/reflux/shop/pulls?state=all", nil, &prs)).To(Succeed())
	g.Expect(prs).To(HaveLen(2))
	byHead := map[string]apiPR{}
	for _, p := range prs {
		byHead[p.Head.Label] = p
	}
	m, a := byHead[merge.Branch], byHead[alert.Branch]
	g.Expect(m.Title).To(Equal("reflux: flux-system/shop: add ConfigMap/checkout-flags /data/EXPRESS_SHIPPING"))
	g.Expect(m.labels()).To(ConsistOf("reflux", "severity/low"))
	g.Expect(m.Body).To(ContainSubstring("`/data/EXPRESS_SHIPPING`"))
	g.Expect(m.Body).To(ContainSubstring("alice@example.com (kubectl-edit)"))
	g.Expect(a.Title).To(HavePrefix("WIP: reflux: flux-system/shop needs a decision"))
	g.Expect(a.labels()).To(ConsistOf("reflux", "needs-decision", "severity/low"))
	var reviewers struct {
		Users []struct {
			Login string `json:"login"`
		} `json:"requested_reviewers"`
	}
	g.Expect(gt.API(ctx, http.MethodGet, fmt.Sprintf("/repos/reflux/shop/pulls/%d", a.Number), nil, &reviewers)).To(Succeed())
	g.Expect(reviewers.Users).To(ContainElement(HaveField("Login", "payments")))

	// A restarted reflux (a fresh writer, a fresh clone) opens nothing new.
	again, err := newWriter(t).Write(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again[0].Outcome).To(Equal(refluxv1.UpToDateReason), again[0].Reason)
	g.Expect(again[0].PullRequest).To(Equal(merge.PullRequest))
	g.Expect(gt.API(ctx, http.MethodGet, "/repos/reflux/shop/pulls?state=all", nil, &prs)).To(Succeed())
	g.Expect(prs).To(HaveLen(2), "one pull request per branch, after a restart too")

	// The records now name their pushed branches, as the governor records.
	for i := range set.Records {
		r := &set.Records[i]
		for _, res := range results {
			if res.Records[0] == r.Name {
				r.Status.Branch, r.Status.Commit, r.Status.State = res.Branch, res.Commit, refluxv1.DriftProposed
			}
		}
	}
	// A reviewer squash-merges the Merge pull request, deleting its branch,
	// and closes the Alert one unmerged.
	g.Expect(gt.Merge(ctx, "reflux", "shop", int(m.Number), "squash", true)).To(Succeed())
	g.Expect(gt.API(ctx, http.MethodPatch, fmt.Sprintf("/repos/reflux/shop/pulls/%d", a.Number),
		map[string]any{"state": "closed"}, nil)).To(Succeed())
	g.Eventually(func() error {
		return gt.API(ctx, http.MethodGet, "/repos/reflux/shop/branches/"+merge.Branch, nil, nil)
	}, 30*time.Second, 200*time.Millisecond).Should(MatchError(ContainSubstring("404")))

	bc, err := newWriter(t).Check(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bc.Closed).To(ConsistOf(And(HaveField("Name", "deployment-checkout-1"),
		HaveField("Reason", refluxv1.ClosedPullRequestClosedReason), HaveField("Message", ContainSubstring(alert.PullRequest)))),
		"the closed pull request's records are dismissed; the merged one's branch, auto-deleted, is not taken as closed")
	g.Expect(bc.PullRequests).To(ContainElement(And(HaveField("Branch", alert.Branch), HaveField("PullRequestState", "closed"))))
	g.Expect(bc.Pending).To(BeEmpty())
	// The closed pull request's branch is deleted, so the next Alert
	// starts a fresh one; the merged one's went with Gitea's merge.
	g.Expect(bc.DeletedClosed).To(ConsistOf(And(HaveField("Branch", alert.Branch), HaveField("Commit", alert.Commit),
		HaveField("PullRequest", alert.PullRequest))))
	g.Expect(gt.API(ctx, http.MethodGet, "/repos/reflux/shop/branches/"+alert.Branch, nil, nil)).To(MatchError(ContainSubstring("404")))
	// Gitea closes the unmerged pull requests of a deleted branch later, on
	// its push queue, right after it records the deletion in the
	// repository's feed. Wait for that, or it closes the pull request the
	// same branch name gets next and the test sees a reviewer's close.
	g.Eventually(func() []string {
		var feed []struct {
			OpType  string `json:"op_type"`
			RefName string `json:"ref_name"`
		}
		g.Expect(gt.API(ctx, http.MethodGet, "/repos/reflux/shop/activities/feeds", nil, &feed)).To(Succeed())
		var deleted []string
		for _, a := range feed {
			if a.OpType == "delete_branch" {
				deleted = append(deleted, a.RefName)
			}
		}
		return deleted
	}, 30*time.Second, 100*time.Millisecond).Should(ContainElement("refs/heads/" + alert.Branch))

	// The same drift is made again: its branch gets the same name (names
	// follow the drift), and the closed pull request, which decided the
	// deleted branch, must not decide this one: a new pull request opens
	// and the new record is not dismissed.
	var redo []refluxv1.Drift
	for _, r := range set.Records {
		if r.Name == "deployment-checkout-1" {
			r.Status = refluxv1.DriftStatus{State: refluxv1.DriftHeld}
			redo = append(redo, r)
		}
	}
	g.Expect(redo).To(HaveLen(1))
	set.Records = redo
	results, err = newWriter(t).Write(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(results).To(HaveLen(1))
	renewed := results[0]
	g.Expect(renewed.Branch).To(Equal(alert.Branch))
	g.Expect(renewed.Commit).NotTo(Equal(alert.Commit))
	g.Expect(renewed.PullRequest).To(HavePrefix(gt.URL + "/reflux/shop/pulls/"))
	g.Expect(renewed.PullRequest).NotTo(Equal(alert.PullRequest))
	g.Expect(renewed.PullRequestState).To(Equal("open"))
	set.Records[0].Status.Branch, set.Records[0].Status.Commit, set.Records[0].Status.State =
		renewed.Branch, renewed.Commit, refluxv1.DriftProposed
	bc, err = newWriter(t).Check(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bc.Closed).To(BeEmpty(), "the closed pull request decided the earlier branch, not this one")
	g.Expect(bc.DeletedClosed).To(BeEmpty())
	g.Expect(bc.Pending).To(ConsistOf(And(HaveField("Branch", alert.Branch), HaveField("PullRequest", renewed.PullRequest))))
}

// TestWriteWithRefusedToken: the branch is still pushed, the outcome
// names the forge's answer, and nothing is retried for it.
func TestWriteWithRefusedToken(t *testing.T) {
	g := NewWithT(t)
	gt, set := giteaShop(t)
	set.ForgeToken = "not-a-token"
	results, err := newWriter(t).Write(context.Background(), set)
	g.Expect(err).NotTo(HaveOccurred(), "a refused token is the user's to fix: no retry")
	g.Expect(results).NotTo(BeEmpty())
	for _, r := range results {
		g.Expect(r.Outcome).To(Equal(refluxv1.PullRequestFailedReason))
		g.Expect(r.Commit).NotTo(BeEmpty(), "the branch is pushed all the same")
		g.Expect(r.Reason).To(ContainSubstring("invalid username, password or token"))
	}

	// The token is fixed: the next branch check opens the missing pull
	// requests from the records that name the branches.
	for i := range set.Records {
		r := &set.Records[i]
		for _, res := range results {
			if res.Records[0] == r.Name {
				r.Status.Branch, r.Status.Commit, r.Status.State = res.Branch, res.Commit, refluxv1.DriftProposed
			}
		}
	}
	set.ForgeToken = gt.Token
	bc, err := newWriter(t).Check(context.Background(), set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bc.Pending).To(HaveLen(len(results)))
	for _, p := range bc.Pending {
		g.Expect(p.PullRequest).To(HavePrefix(gt.URL+"/reflux/shop/pulls/"), "branch %s", p.Branch)
		g.Expect(p.PullRequestState).To(Equal("open"))
	}
	g.Expect(bc.Closed).To(BeEmpty())
}

// TestWriteWithReadOnlyToken: a token the forge lets read the repository
// but not write its pull requests is named TokenReadOnly on the
// write-back (issue 22 §3), not one more PullRequestFailed: for a token
// scoped read:repository Gitea refuses the pull request itself, for a
// user who may only read it opens it and refuses its labels. Either way
// the branch is pushed and nothing is retried for it.
func TestWriteWithReadOnlyToken(t *testing.T) {
	gt, set := giteaShop(t)
	ctx := context.Background()
	reader, err := gt.AddReader(ctx, "reader", "shop")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	scoped, err := gt.MintToken(ctx, gt.Username, "read:repository")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, tt := range []struct{ name, token, answer string }{
		{"a token scoped read:repository", scoped, "required=[write:repository]"},
		{"a user who may only read", reader, "user should have a permission to write to a repo"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			set := set
			set.ForgeToken = tt.token
			results, err := newWriter(t).Write(ctx, set)
			g.Expect(err).NotTo(HaveOccurred(), "a read-only token is the user's to fix: no retry")
			g.Expect(results).NotTo(BeEmpty())
			for _, r := range results {
				g.Expect(r.Outcome).To(Equal(refluxv1.TokenReadOnlyReason), r.Reason)
				g.Expect(r.Commit).NotTo(BeEmpty(), "the branch is pushed all the same")
				g.Expect(r.Reason).To(ContainSubstring(tt.answer))
			}
		})
	}
}

// TestWriteWithForgeDown: the branch is pushed and the error is returned,
// so the governor backs off and retries; the pull request opens then.
func TestWriteWithForgeDown(t *testing.T) {
	g := NewWithT(t)
	gt, set := giteaShop(t)
	down := func(ctx context.Context, o forge.Options) (Forge, error) {
		o.APIURL = "http://127.0.0.1:1" // nothing listens
		return forge.New(ctx, o)
	}
	h := newWriter(t)
	h.Forges = down
	results, err := h.Write(context.Background(), set)
	g.Expect(err).To(HaveOccurred())
	g.Expect(results[0].Outcome).To(Equal(refluxv1.PullRequestFailedReason))
	g.Expect(results[0].Commit).NotTo(BeEmpty())

	h.Forges = nil // the forge is back
	results, err = h.Write(context.Background(), set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(results[0].PullRequest).To(HavePrefix(gt.URL))
}

// TestSquashMergedBranchTheForgeLeftIsDeletedOnceResolved: a reviewer
// squash-merges without deleting the branch. Git does not see the branch
// merged, the forge does: reflux keeps it while a record waits on it and
// deletes it once none does.
func TestSquashMergedBranchTheForgeLeftIsDeletedOnceResolved(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gt, set := giteaShop(t)
	results, err := newWriter(t).Write(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	merge := results[0]
	g.Expect(merge.Outcome).To(Equal(refluxv1.BranchPushedReason), merge.Reason)
	var merged refluxv1.Drift
	for i := range set.Records {
		r := &set.Records[i]
		for _, res := range results {
			if res.Records[0] == r.Name {
				r.Status.Branch, r.Status.Commit, r.Status.State = res.Branch, res.Commit, refluxv1.DriftProposed
			}
		}
		if r.Status.Branch == merge.Branch {
			merged = *r
		}
	}
	g.Expect(merged.Name).NotTo(BeEmpty())
	var pr apiPR
	number := merge.PullRequest[strings.LastIndex(merge.PullRequest, "/")+1:]
	g.Expect(gt.API(ctx, http.MethodGet, "/repos/reflux/shop/pulls/"+number, nil, &pr)).To(Succeed())
	g.Expect(gt.Merge(ctx, "reflux", "shop", int(pr.Number), "squash", false)).To(Succeed())

	// Its record still waits (Flux has not applied the merge): kept.
	bc, err := newWriter(t).Check(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bc.Deleted).NotTo(ContainElement(merge.Branch))
	g.Expect(bc.Closed).NotTo(ContainElement(HaveField("Name", merged.Name)), "merged, not closed")
	g.Expect(gt.API(ctx, http.MethodGet, "/repos/reflux/shop/branches/"+merge.Branch, nil, nil)).To(Succeed())

	// The record resolved: nothing waits on the branch any more.
	var open []refluxv1.Drift
	for _, r := range set.Records {
		if r.Name != merged.Name {
			open = append(open, r)
		}
	}
	set.Records = open
	bc, err = newWriter(t).Check(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bc.Deleted).To(ContainElement(merge.Branch))
	g.Expect(gt.API(ctx, http.MethodGet, "/repos/reflux/shop/branches/"+merge.Branch, nil, nil)).To(MatchError(ContainSubstring("404")))
}

// TestCheckWithForgeDownGoesOnWithGit: a forge that does not answer stops
// neither the branch check nor what Git alone decides, and dismisses
// nothing on its missing word: a branch deleted meanwhile may be a merged
// pull request's.
func TestCheckWithForgeDownGoesOnWithGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, set := giteaShop(t)
	results, err := newWriter(t).Write(ctx, set)
	g.Expect(err).NotTo(HaveOccurred())
	for i := range set.Records {
		r := &set.Records[i]
		for _, res := range results {
			if res.Records[0] == r.Name {
				r.Status.Branch, r.Status.Commit, r.Status.State = res.Branch, res.Commit, refluxv1.DriftProposed
			}
		}
	}
	// One pushed branch disappears (a reviewer merged it on the forge with
	// auto-delete, or deleted it: only the forge could say which).
	gone := results[0].Branch
	auth, err := git.NewAuth(set.Source.URL, set.Source.AuthData)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(newWriter(t).Git.DeleteClosed(ctx, writeback.Repo{URL: set.Source.URL, Auth: auth},
		set.Policy.Spec.Git.BranchPrefix, "main", gone, results[0].Commit)).To(Succeed())

	h := newWriter(t)
	h.Forges = func(ctx context.Context, o forge.Options) (Forge, error) {
		o.APIURL = "http://127.0.0.1:1" // nothing listens
		return forge.New(ctx, o)
	}
	bc, err := h.Check(ctx, set)
	g.Expect(err).NotTo(HaveOccurred(), "the check goes on with Git's word")
	g.Expect(bc.Closed).To(BeEmpty(), "nothing is dismissed on the forge's missing word")
	g.Expect(bc.Pending).To(ConsistOf(HaveField("Branch", results[1].Branch)))
}
