package pullrequest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// The proposals tests (issue 17): what a branch and its pull request
// propose is exactly the open records on it, whatever is dismissed,
// reverted or merged, and whoever else pushed to the branch.

const ledgerFile = "base/ledger.yaml"

// ledgerTenant creates a tenant of its own for one test, from the
// ledger tree, and waits until reflux watches it.
func ledgerTenant(t *testing.T, name string) *kustomizev1.Kustomization {
	t.Helper()
	ctx := context.Background()
	k, err := createTenant(ctx, tenant{namespace: name, repo: name, dir: "testdata/ledger", labels: map[string]string{tierLabel: name}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (fixture.Namespace{Env: env, Name: name}).WaitClean(ctx, k.Name); err != nil {
		t.Fatal(err)
	}
	return k
}

// ledgerEdit is one live edit of the ledger tree, made as `kubectl edit`
// does, and what it turns into in the file reflux proposes.
type ledgerEdit struct {
	object string
	apply  func(g Gomega, namespace string)
	// from and to are the file's text before and after the edit.
	from, to string
}

// ledgerEdits are five edits, each an Alert of another severity: an image
// (high), replicas (low), a memory limit 8x (critical), a config value and
// a Service's target port (medium). (Not the port itself: it keys the
// ports list, and Flux's apply of a changed key adds a second entry.)
var ledgerEdits = []ledgerEdit{
	{object: "ledger-api", from: "image: ghcr.io/example/ledger:2.0.0\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ledger-worker",
		to: "image: ghcr.io/example/ledger:1.9.0\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ledger-worker",
		apply: func(g Gomega, ns string) {
			driftDeployment(g, ns, "ledger-api", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/example/ledger:1.9.0" })
		}},
	{object: "ledger-worker", from: "replicas: 1 # one worker", to: "replicas: 3 # one worker",
		apply: func(g Gomega, ns string) {
			driftDeployment(g, ns, "ledger-worker", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(3)) })
		}},
	{object: "ledger-batch", from: "memory: 128Mi", to: "memory: 1Gi",
		apply: func(g Gomega, ns string) {
			driftDeployment(g, ns, "ledger-batch", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
			})
		}},
	{object: "ledger-config", from: `LOG_LEVEL: "info"`, to: `LOG_LEVEL: "debug"`,
		apply: func(g Gomega, ns string) { driftConfig(g, ns, map[string]string{"LOG_LEVEL": "debug"}) }},
	{object: "ledger", from: "targetPort: 8080", to: "targetPort: 9090",
		apply: func(g Gomega, ns string) {
			svc := &corev1.Service{}
			driftEdit(g, ns, "ledger", svc, func() { svc.Spec.Ports[0].TargetPort = intstr.FromInt32(9090) })
		}},
}

func ptr[T any](v T) *T { return &v }

func editDeployment(g Gomega, ns, name string, mutate func(*appsv1.Deployment)) {
	d := &appsv1.Deployment{}
	editObject(g, ns, name, d, func() { mutate(d) })
}

// driftDeployment is editDeployment for an edit reflux holds (driftEdit).
func driftDeployment(g Gomega, ns, name string, mutate func(*appsv1.Deployment)) {
	d := &appsv1.Deployment{}
	driftEdit(g, ns, name, d, func() { mutate(d) })
}

// proposed waits until the records of edits are Proposed on one branch,
// and returns it.
func proposed(g Gomega, ns string, edits []ledgerEdit) string {
	branch := ""
	for _, e := range edits {
		rec := recordIn(g, ns, e.object, withPullRequest)
		if branch == "" {
			branch = rec.Status.Branch
		}
		g.Expect(rec.Status.Branch).To(Equal(branch), "%s is on the one needs-decision branch", e.object)
	}
	g.Expect(branch).To(ContainSubstring("needs-decision"))
	return branch
}

// expected is the ledger file as it is on main, with edits made.
func expected(main string, edits []ledgerEdit) string {
	for _, e := range edits {
		main = strings.Replace(main, e.from, e.to, 1)
	}
	return main
}

// fileAt reads path at ref of repo with the git CLI ("" when either is
// absent): Gitea's own contents API can fail for a while after a push.
func fileAt(g Gomega, repo, ref, path string) string {
	u, err := url.Parse(gt.URL + "/reflux/" + repo + ".git")
	g.Expect(err).NotTo(HaveOccurred())
	u.User = url.UserPassword(gt.Username, gt.Password)
	dir, err := os.MkdirTemp("", "reflux-fileat-")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = os.RemoveAll(dir) }() // a scratch clone
	out, err := exec.Command("git", "clone", "-q", "--depth", "1", "--branch", ref, u.String(), dir).CombinedOutput()
	if err != nil && strings.Contains(string(out), "not found in upstream") {
		return ""
	}
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	b, err := os.ReadFile(filepath.Join(dir, path))
	if os.IsNotExist(err) {
		return ""
	}
	g.Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// branchExists asks Gitea whether branch is there.
func branchExists(repo, branch string) bool {
	return gt.API(context.Background(), http.MethodGet, "/repos/reflux/"+repo+"/branches/"+url.PathEscape(branch), nil, nil) == nil
}

func dismiss(g Gomega, ns, object string) {
	rec := recordIn(g, ns, object, func(*refluxv1.Drift) error { return nil })
	fixture.Dismiss(g, env.Client, rec)
}

func isState(state refluxv1.DriftState) func(*refluxv1.Drift) error {
	return func(d *refluxv1.Drift) error {
		if d.Status.State != state {
			return fmt.Errorf("state %q, want %q", d.Status.State, state)
		}
		return nil
	}
}

func prLabels(p pr) []string {
	var out []string
	for _, l := range p.Labels {
		out = append(out, l.Name)
	}
	return out
}

// comments lists the comments of pull request number of repo.
func comments(g Gomega, repo string, number int) []string {
	var out []struct {
		Body string `json:"body"`
	}
	g.Expect(gt.API(context.Background(), http.MethodGet, fmt.Sprintf("/repos/reflux/%s/issues/%d/comments", repo, number), nil, &out)).To(Succeed())
	var bodies []string
	for _, c := range out {
		bodies = append(bodies, c.Body)
	}
	return bodies
}

// humanCommit pushes a commit by Jane, a reviewer, onto branch.
func humanCommit(t *testing.T, repo, branch, path, content string) {
	t.Helper()
	u, err := url.Parse(gt.URL + "/reflux/" + repo + ".git")
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(gt.Username, gt.Password)
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=Jane Reviewer", "-c", "user.email=jane@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("clone", "-q", "--branch", branch, u.String(), ".")
	if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", path)
	git("commit", "-qm", "a reviewer's note")
	git("push", "-q", "origin", branch)
}

// TestDismissedAlertsLeaveTheirBranch: five Alert records on one
// needs-decision branch; three are dismissed, and the branch and its pull
// request carry exactly the other two (their labels too); the last two are
// dismissed, and the pull request is closed with a comment naming why and
// the branch deleted.
func TestDismissedAlertsLeaveTheirBranch(t *testing.T) {
	g := NewWithT(t)
	const name = "ledger-dismiss"
	ledgerTenant(t, name)
	main := fileAt(g, name, "main", ledgerFile)
	for _, e := range ledgerEdits {
		e.apply(g, name)
	}
	branch := proposed(g, name, ledgerEdits)
	g.Eventually(func() string { return fileAt(g, name, branch, ledgerFile) }, timeout, interval).
		Should(Equal(expected(main, ledgerEdits)), "all five on the branch")
	g.Eventually(func() []string { return prLabels(pullsIn(g, name, branch)[0]) }, timeout, interval).
		Should(ContainElement("severity/critical"))
	consistent(t, g, name)

	// The image, the memory limit and the port are dismissed.
	kept := []ledgerEdit{ledgerEdits[1], ledgerEdits[3]}
	for _, i := range []int{0, 2, 4} {
		dismiss(g, name, ledgerEdits[i].object)
	}
	g.Eventually(func() string { return fileAt(g, name, branch, ledgerFile) }, timeout, interval).
		Should(Equal(expected(main, kept)), "the branch is its base plus the two open records")
	g.Eventually(func() string { return pullsIn(g, name, branch)[0].Body }, timeout, interval).
		Should(And(ContainSubstring("/spec/replicas"), ContainSubstring("/data/LOG_LEVEL"),
			Not(ContainSubstring("/image")), Not(ContainSubstring("memory")), Not(ContainSubstring("/targetPort"))))
	g.Eventually(func() []string { return prLabels(pullsIn(g, name, branch)[0]) }, timeout, interval).
		Should(ConsistOf("reflux", "needs-decision", "severity/medium"), "the labels follow the branch")
	for _, e := range kept {
		rec := recordIn(g, name, e.object, withPullRequest)
		g.Expect(rec.Status.Branch).To(Equal(branch))
	}
	consistent(t, g, name)
	for _, i := range []int{0, 2, 4} {
		rec := recordIn(g, name, ledgerEdits[i].object, isState(refluxv1.DriftDismissed))
		g.Expect(rec.Status.Closed).NotTo(BeNil())
		g.Expect(rec.Status.Closed.Reason).To(Equal(refluxv1.ClosedDismissedReason))
		g.Expect(rec.Status.Closed.By).To(ContainSubstring("kubectl-annotate"))
	}

	// The last two go: nothing open is left on the branch.
	number := pullsIn(g, name, branch)[0].Number
	for _, e := range kept {
		dismiss(g, name, e.object)
	}
	g.Eventually(func() string { return pullsIn(g, name, branch)[0].State }, timeout, interval).Should(Equal("closed"))
	g.Eventually(func() bool { return branchExists(name, branch) }, timeout, interval).Should(BeFalse(), "the branch is deleted")
	g.Expect(comments(g, name, number)).To(ContainElement(And(
		ContainSubstring("reflux closed this pull request: no open drift is left on it"),
		ContainSubstring("`/spec/replicas`"), ContainSubstring("`/data/LOG_LEVEL`"), ContainSubstring("`/spec/template/spec/containers/0/image`"),
		ContainSubstring("Dismissed"), ContainSubstring("kubectl-annotate"))))
	g.Expect(fileAt(g, name, "main", ledgerFile)).To(Equal(main), "nothing was written to main")
	consistent(t, g, name)
}

// TestMergingAfterDismissalsWritesNoDismissedChange: a reviewer who
// merges the pull request after some of its records were dismissed writes
// only the open ones into Git, and those resolve once Flux applies them.
func TestMergingAfterDismissalsWritesNoDismissedChange(t *testing.T) {
	g := NewWithT(t)
	const name = "ledger-merge"
	ledgerTenant(t, name)
	main := fileAt(g, name, "main", ledgerFile)
	edits := ledgerEdits[:3]
	for _, e := range edits {
		e.apply(g, name)
	}
	branch := proposed(g, name, edits)
	dismiss(g, name, edits[0].object)
	kept := edits[1:]
	g.Eventually(func() string { return fileAt(g, name, branch, ledgerFile) }, timeout, interval).Should(Equal(expected(main, kept)))
	consistent(t, g, name)

	// A draft (WIP:) is merged once a reviewer takes it out of draft. The
	// pull request's body may still be following the dismissal when the
	// reviewer acts; reflux then keeps their decision, and a reviewer whose
	// edit crossed reflux's merges on the next try.
	g.Eventually(func() error {
		p := pullsIn(g, name, branch)[0]
		if err := gt.API(context.Background(), http.MethodPatch, fmt.Sprintf("/repos/reflux/%s/pulls/%d", name, p.Number),
			map[string]any{"title": strings.TrimPrefix(p.Title, "WIP: ")}, nil); err != nil {
			return err
		}
		return gt.Merge(context.Background(), "reflux", name, p.Number, "merge", true)
	}, timeout, interval).Should(Succeed())
	g.Expect(fileAt(g, name, "main", ledgerFile)).To(Equal(expected(main, kept)), "main has the open records' edits, and only those")
	for _, e := range kept {
		rec := recordIn(g, name, e.object, isState(refluxv1.DriftResolved))
		g.Expect(rec.Status.Closed.Reason).To(Equal(refluxv1.ClosedMergedReason))
	}
}

// TestHumanCommitStaysWhenRecordsLeave: a reviewer's commit on the
// branch is kept; the dismissed record's edit is taken out by a commit
// of reflux's on top, and when nothing of reflux's is left the pull
// request is left to the reviewer.
func TestHumanCommitStaysWhenRecordsLeave(t *testing.T) {
	g := NewWithT(t)
	const name = "ledger-human"
	ledgerTenant(t, name)
	main := fileAt(g, name, "main", ledgerFile)
	edits := ledgerEdits[1:3]
	for _, e := range edits {
		e.apply(g, name)
	}
	branch := proposed(g, name, edits)
	g.Eventually(func() string { return fileAt(g, name, branch, ledgerFile) }, timeout, interval).Should(Equal(expected(main, edits)))
	humanCommit(t, name, branch, "NOTES.md", "checked with the ledger team\n")

	dismiss(g, name, edits[1].object)
	g.Eventually(func() string { return fileAt(g, name, branch, ledgerFile) }, timeout, interval).
		Should(Equal(expected(main, edits[:1])), "the dismissed edit is taken out")
	g.Expect(fileAt(g, name, branch, "NOTES.md")).To(Equal("checked with the ledger team\n"), "the reviewer's commit stays")
	g.Expect(branchCommitAuthors(g, name, branch)).To(ContainElement("Jane Reviewer"))

	dismiss(g, name, edits[0].object)
	g.Eventually(func() string { return fileAt(g, name, branch, ledgerFile) }, timeout, interval).Should(Equal(main))
	g.Expect(fileAt(g, name, branch, "NOTES.md")).To(Equal("checked with the ledger team\n"))
	p := pullsIn(g, name, branch)[0]
	g.Expect(p.State).To(Equal("open"), "the branch carries a reviewer's work: theirs to decide")
	g.Eventually(func() []string { return comments(g, name, p.Number) }, timeout, interval).
		Should(ContainElement(ContainSubstring("yours to decide")))
}

// branchCommitAuthors lists the authors of the newest commits of branch.
func branchCommitAuthors(g Gomega, repo, branch string) []string {
	var out []struct {
		Commit struct {
			Author struct {
				Name string `json:"name"`
			} `json:"author"`
		} `json:"commit"`
	}
	g.Expect(gt.API(context.Background(), http.MethodGet, "/repos/reflux/"+repo+"/commits?limit=10&sha="+url.QueryEscape(branch), nil, &out)).To(Succeed())
	var names []string
	for _, c := range out {
		names = append(names, c.Commit.Author.Name)
	}
	return names
}
