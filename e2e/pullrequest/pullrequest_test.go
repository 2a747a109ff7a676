package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// pr is what Gitea's API says of a pull request.
type pr struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  string `json:"state"`
	URL    string `json:"html_url"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	Head struct {
		Label string `json:"label"`
		SHA   string `json:"sha"`
	} `json:"head"`
}

// verification is what Gitea says of a commit's signature.
type verification struct {
	Verified bool   `json:"verified"`
	Reason   string `json:"reason"`
	Signer   struct {
		Email string `json:"email"`
	} `json:"signer"`
}

func verificationOf(g Gomega, repo, sha string) verification {
	var c struct {
		Commit struct {
			Verification verification `json:"verification"`
		} `json:"commit"`
	}
	g.Expect(gt.API(context.Background(), http.MethodGet, "/repos/reflux/"+repo+"/git/commits/"+sha, nil, &c)).To(Succeed())
	return c.Commit.Verification
}

func pullsOf(g Gomega, branch string) []pr {
	return pullsIn(g, repo, branch)
}

// pullsIn lists the pull requests of repo, in any state, whose head is
// branch; every one of them when branch is empty.
func pullsIn(g Gomega, repo, branch string) []pr {
	var all, out []pr
	g.Expect(gt.API(context.Background(), http.MethodGet, "/repos/reflux/"+repo+"/pulls?state=all&limit=50", nil, &all)).To(Succeed())
	for _, p := range all {
		if branch == "" || p.Head.Label == branch {
			out = append(out, p)
		}
	}
	return out
}

func withPullRequest(d *refluxv1.Drift) error {
	if d.Status.State != refluxv1.DriftProposed || d.Status.PullRequest == "" {
		return fmt.Errorf("state %q pull request %q", d.Status.State, d.Status.PullRequest)
	}
	return nil
}

func TestPolicyChecksTheForge(t *testing.T) {
	g := NewWithT(t)
	p := &refluxv1.ReverseSyncPolicy{}
	g.Eventually(func() bool {
		_ = env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "payments"}, p)
		return conditions.IsReady(p)
	}, timeout, interval).Should(BeTrue(), "the token works and reaches the repository")

	bad := p.DeepCopy()
	bad.ObjectMeta = p.ObjectMeta
	bad.Name, bad.ResourceVersion, bad.UID = "bad-token", "", ""
	bad.Spec.KustomizationSelector.MatchLabels = map[string]string{"reflux.dev/tier": "payments"}
	bad.Spec.Git.ReportOnly = false
	bad.Spec.Git.PullRequest.SecretRef.Name = "missing"
	bad.Status = refluxv1.ReverseSyncPolicyStatus{}
	g.Expect(env.Client.Create(context.Background(), bad)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), bad) })
	g.Eventually(func() string {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(bad), bad)
		if c := conditions.Get(bad, meta.StalledCondition); c != nil && c.Status == "True" {
			return c.Reason + ": " + c.Message
		}
		return ""
	}, timeout, interval).Should(And(HavePrefix(refluxv1.TokenNotFoundReason), ContainSubstring("spec.git.pullRequest.secretRef")))
}

// TestConfigMapKeyBecomesOnePullRequestAndResolvesOnMerge follows a live
// flag to one pull request, a second flag updating that same pull
// request, a reviewer's squash merge that deletes the branch, and the
// records resolving once Flux applies it.
func TestConfigMapKeyBecomesOnePullRequestAndResolvesOnMerge(t *testing.T) {
	g := NewWithT(t)
	payments.AddKey(g, env.Client, "payment-flags", "INSTANT_REFUNDS", "true")

	rec := payments.WaitRecord(g, "ConfigMap", "payment-flags", withPullRequest)
	branch := rec.Status.Branch
	prs := pullsOf(g, branch)
	g.Expect(prs).To(HaveLen(1))
	first := prs[0]
	g.Expect(first.URL).To(Equal(rec.Status.PullRequest))
	g.Expect(first.Body).To(ContainSubstring("`/data/INSTANT_REFUNDS`"))
	g.Expect(first.Body).To(ContainSubstring("`base/flags.yaml"))
	var labels []string
	for _, l := range first.Labels {
		labels = append(labels, l.Name)
	}
	g.Expect(labels).To(ContainElements("reflux", "severity/low"))
	// The commit reflux pushed is the pull request's head, and Gitea
	// checked its signature against the key the suite registered.
	g.Expect(first.Head.SHA).To(Equal(rec.Status.Commit))
	v := verificationOf(g, repo, first.Head.SHA)
	g.Expect(v.Verified).To(BeTrue(), "gitea: %s", v.Reason)
	g.Expect(v.Signer.Email).To(Equal(gt.Username + "@example.com"))

	k := ks.DeepCopy()
	g.Eventually(func() string {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(k), k)
		if c := conditions.Get(k, refluxv1.ReverseSyncedCondition); c != nil {
			return c.Message
		}
		return ""
	}, timeout, interval).Should(ContainSubstring("pull request " + first.URL))
	p := &refluxv1.ReverseSyncPolicy{}
	g.Eventually(func() []refluxv1.PendingBranch {
		_ = env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "payments"}, p)
		return p.Status.PendingBranches
	}, timeout, interval).Should(ContainElement(HaveField("PullRequest", first.URL)))

	ev := payments.Event(g, refluxv1.BranchPushedReason, first.URL)
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-pull-request", first.URL))
	g.Eventually(func() float64 {
		return openPullRequests(g)
	}, timeout, interval).Should(BeNumerically(">=", 1), "reflux_pull_requests{state=open}")

	// A second flag on the same Kustomization: the same pull request grows.
	payments.AddKey(g, env.Client, "payment-flags", "SPLIT_PAYMENTS", "true")
	g.Eventually(func() string {
		if prs := pullsOf(g, branch); len(prs) == 1 {
			return prs[0].Body
		}
		return "not exactly one pull request"
	}, timeout, interval).Should(And(ContainSubstring("/data/SPLIT_PAYMENTS"), ContainSubstring("/data/INSTANT_REFUNDS")))

	// The reviewer squash-merges and Gitea deletes the branch.
	g.Expect(gt.Merge(context.Background(), "reflux", repo, int(first.Number), "squash", true)).To(Succeed())
	payments.WaitRecord(g, "ConfigMap", "payment-flags", fixture.InState(refluxv1.DriftResolved))
	// Eventually: when Flux's in-flight apply undid the first flag over its
	// hold, the record kept it as evidence and the merge brought it back
	// to Git, while the object, held for the second, lacked it; Flux
	// applies it once the hold goes.
	g.Eventually(func() map[string]string { return payments.ConfigMap(g, "payment-flags").Data }, timeout, interval).
		Should(And(HaveKeyWithValue("INSTANT_REFUNDS", "true"), HaveKeyWithValue("SPLIT_PAYMENTS", "true")), "Flux applied the merge")
}

// TestClosedPullRequestDismissesAndFluxRestoresGit: a reviewer closes the
// pull request unmerged; the records are dismissed, the hold goes and
// Flux restores Git's value. reflux deletes the closed pull request's
// branch, so the Kustomization's next drift opens a new pull request from
// a fresh branch instead of landing, unseen, on the decided one.
func TestClosedPullRequestDismissesAndFluxRestoresGit(t *testing.T) {
	g := NewWithT(t)
	payments.AddKey(g, env.Client, "search-flags", "FUZZY_MATCH", "true")
	rec := payments.WaitRecord(g, "ConfigMap", "search-flags", withPullRequest)
	prs := pullsOf(g, rec.Status.Branch)
	g.Expect(prs).To(HaveLen(1))
	// Changing a value Git declares is an Alert by default: a draft that
	// needs a decision. The Kustomization's open Alert pull request (the
	// image rollback's, when that test ran first) carries it too.
	g.Expect(prs[0].Title).To(HavePrefix("WIP: reflux: payments/payments needs a decision: "))
	g.Expect(prs[0].Body).To(ContainSubstring("`/data/FUZZY_MATCH`"))
	var labels []string
	for _, l := range prs[0].Labels {
		labels = append(labels, l.Name)
	}
	g.Expect(labels).To(ContainElements("reflux", "needs-decision"))
	g.Expect(strings.Contains(prs[0].Body, "reflux never merges this pull request")).To(BeTrue())
	g.Expect(gt.API(context.Background(), http.MethodPatch, fmt.Sprintf("/repos/reflux/%s/pulls/%d", repo, prs[0].Number),
		map[string]any{"state": "closed"}, nil)).To(Succeed())
	payments.WaitRecord(g, "ConfigMap", "search-flags", fixture.InState(refluxv1.DriftDismissed))
	g.Eventually(func() string {
		return payments.ConfigMap(g, "search-flags").Data["FUZZY_MATCH"]
	}, timeout, interval).Should(Equal("false"), "Flux restores Git once the hold is released")

	// reflux deletes the closed pull request's branch and says why.
	closed := prs[0]
	g.Eventually(func() error {
		return gt.API(context.Background(), http.MethodGet, "/repos/reflux/"+repo+"/branches/"+closed.Head.Label, nil, nil)
	}, timeout, interval).Should(MatchError(ContainSubstring("404")), "branch %s deleted", closed.Head.Label)
	ev := payments.Event(g, governor.BranchDeletedEventReason, closed.Head.Label)
	g.Expect(ev.Message).To(ContainSubstring("pull request " + closed.URL + " was closed without merging"))
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-pull-request", closed.URL))

	// The next decision the Kustomization needs gets a pull request of its
	// own, from a fresh branch, not the closed one's.
	payments.AddKey(g, env.Client, "search-flags", "FUZZY_MATCH", "prefix-only")
	var next pr
	g.Eventually(func() error {
		for _, p := range pullsIn(g, repo, "") {
			if p.State == "open" && strings.Contains(p.Body, "`/data/FUZZY_MATCH`") {
				next = p
				return nil
			}
		}
		return errors.New("no open pull request for FUZZY_MATCH")
	}, timeout, interval).Should(Succeed())
	g.Expect(next.Number).NotTo(Equal(closed.Number))
	g.Expect(next.Head.Label).NotTo(Equal(closed.Head.Label))
	g.Expect(next.Title).To(HavePrefix("WIP: reflux: payments/payments needs a decision: "))
	g.Expect(next.Body).To(ContainSubstring("`\"prefix-only\"`"))
	g.Expect(next.Body).NotTo(ContainSubstring("payments-api"), "the dismissed image rollback stays dismissed")
	g.Expect(pullsOf(g, closed.Head.Label)).To(HaveLen(1), "the closed pull request was not reused")
}

// openPullRequests reads reflux_pull_requests{state="open"} of the
// Kustomization from one scrape of reflux's /metrics.
func openPullRequests(g Gomega) float64 {
	v, _ := fixture.Metric(g, rfx.Process, "reflux_pull_requests",
		map[string]string{"namespace": ns, "kustomization": "payments", "state": "open"})
	return v
}
