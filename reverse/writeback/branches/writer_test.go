package branches

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/gittestserver"
	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/writeback"
)

const (
	user = "reflux"
	pass = "s3cret"
)

// gitServer serves testdata/shop as repo shop.git over HTTP basic auth.
func gitServer(t *testing.T) (*gittestserver.GitServer, string) {
	t.Helper()
	return gitServerOf(t, "testdata/shop")
}

// gitServerOf serves the tree as repo shop.git over HTTP basic auth.
func gitServerOf(t *testing.T, tree string) (*gittestserver.GitServer, string) {
	t.Helper()
	srv := gittestserver.NewGitServer(t.TempDir()).Auth(user, pass).AutoCreate()
	if err := srv.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.StopHTTP)
	work := t.TempDir()
	run(t, "", "cp", "-r", tree+"/.", work)
	run(t, work, "git", "init", "-q", "-b", "main")
	run(t, work, "git", "add", "-A")
	run(t, work, "git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", "shop")
	url := srv.HTTPAddressWithCredentials() + "/shop.git"
	run(t, work, "git", "push", "-q", url, "main")
	return srv, srv.HTTPAddress() + "/shop.git"
}

func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func shopSet(url string) reverse.DriftSet {
	seen := metav1.NewTime(time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC))
	flags := refluxv1.Drift{}
	flags.Name, flags.Namespace = "configmap-checkout-flags-1", "flux-system"
	flags.Spec.Object = refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "checkout-flags"}
	flags.Spec.FirstSeen = seen
	flags.Spec.Fields = []refluxv1.DriftField{{
		Pointer: "/data/EXPRESS_SHIPPING", ChangeType: refluxv1.ChangeAdd, LiveValue: `"true"`,
		Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, Rule: "feature-flags", FirstSeen: &seen,
		Origin:   &refluxv1.FieldOrigin{File: "base/kustomization.yaml", Kind: "generator-literal"},
		Modifier: &refluxv1.Modifier{Manager: "kubectl-edit", User: "alice@example.com"},
	}}
	web := refluxv1.Drift{}
	web.Name = "deployment-checkout-1"
	web.Spec.Object = refluxv1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "checkout"}
	web.Spec.FirstSeen = seen
	web.Spec.Fields = []refluxv1.DriftField{{
		Pointer: "/spec/replicas", ChangeType: refluxv1.ChangeUpdate, GitValue: "4", LiveValue: "6",
		Action: refluxv1.AlertAction, Severity: refluxv1.SeverityLow, FirstSeen: &seen,
		Origin: &refluxv1.FieldOrigin{File: "overlays/prod/kustomization.yaml", Line: 6, Column: 12, Kind: "replicas"},
	}}
	return setOf(url, []refluxv1.Drift{flags, web})
}

// setOf is the drift set of records of the shop Kustomization, which
// applies ./overlays/prod of the repository at url into namespace shop.
func setOf(url string, records []refluxv1.Drift) reverse.DriftSet {
	ks := &kustomizev1.Kustomization{}
	ks.Name, ks.Namespace = "shop", "flux-system"
	ks.Spec.Path = "./overlays/prod"
	ks.Spec.TargetNamespace = "shop"
	p := &refluxv1.ReverseSyncPolicy{}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	p.Spec.Git.BranchPrefix = "reflux/"
	p.Spec.Git.AlertBranches = "Separate"
	return reverse.DriftSet{
		Kustomization: refluxv1.KustomizationRef{Namespace: "flux-system", Name: "shop"},
		Spec:          ks, Policy: p, Records: records, Fingerprint: reverse.Fingerprint(records),
		Source: &reverse.GitSource{URL: url, Branch: "main",
			AuthData: map[string][]byte{"username": []byte(user), "password": []byte(pass)}},
	}
}

func newWriter(t *testing.T) *Writer {
	t.Helper()
	eng, err := writeback.New(t.TempDir(), writeback.WithInsecureHTTP())
	if err != nil {
		t.Fatal(err)
	}
	return &Writer{Git: eng, Log: logr.Discard()}
}

// clone checks out a branch of the server's repo.
func clone(t *testing.T, srv *gittestserver.GitServer, branch string) string {
	t.Helper()
	dir := t.TempDir()
	run(t, "", "git", "clone", "-q", "-b", branch, srv.HTTPAddressWithCredentials()+"/shop.git", dir)
	return dir
}

func TestMergeAndAlertBranches(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	h := newWriter(t)
	set := shopSet(url)

	proposals, err := h.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(proposals).To(HaveLen(2))
	merge, alert := proposals[0], proposals[1]
	g.Expect(merge.Action).To(Equal(refluxv1.MergeAction))
	g.Expect(merge.Outcome).To(Equal(refluxv1.BranchPushedReason), merge.Reason)
	g.Expect(merge.Branch).To(HavePrefix("reflux/flux-system-shop/"))
	g.Expect(merge.Records).To(Equal([]string{"configmap-checkout-flags-1"}))
	g.Expect(alert.Outcome).To(Equal(refluxv1.BranchPushedReason), alert.Reason)
	g.Expect(alert.Branch).To(ContainSubstring("needs-decision"))

	// The Merge branch adds the literal to the generator, keeping its style.
	dir := clone(t, srv, merge.Branch)
	base, err := os.ReadFile(filepath.Join(dir, "base/kustomization.yaml"))
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(base)).To(ContainSubstring("- NEW_CHECKOUT=false\n      - EXPRESS_SHIPPING=true\n"))
	msg := run(t, dir, "git", "log", "-1", "--format=%B")
	g.Expect(msg).To(ContainSubstring("/data/EXPRESS_SHIPPING"))
	g.Expect(msg).To(ContainSubstring("alice@example.com"))
	// The trailers say which record, rule and person the change came from.
	trailers := run(t, dir, "sh", "-c", "git log -1 --format=%B | git interpret-trailers --parse")
	g.Expect(trailers).To(ContainSubstring("Reflux-Drift: flux-system/configmap-checkout-flags-1\n" +
		"Reflux-Rule: feature-flags\nReflux-Severity: low\nReflux-Field-Manager: kubectl-edit\n" +
		"Reflux-Edited-By: alice@example.com\n"))
	// Only the intended file changed.
	g.Expect(strings.TrimSpace(run(t, dir, "git", "diff", "--name-only", "origin/main", "HEAD"))).To(Equal("base/kustomization.yaml"))

	// The Alert branch carries the overlay's replicas, for a human.
	dir = clone(t, srv, alert.Branch)
	overlay, err := os.ReadFile(filepath.Join(dir, "overlays/prod/kustomization.yaml"))
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(overlay)).To(ContainSubstring("count: 6"))

	// The same drift set again writes nothing new.
	again, err := h.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(again[0].Outcome).To(Equal(refluxv1.UpToDateReason))
	g.Expect(again[0].Commit).To(Equal(merge.Commit))
	g.Expect(again[1].Outcome).To(Equal(refluxv1.UpToDateReason))
}

func TestReportOnlyWritesNothing(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	set := shopSet(url)
	set.Policy.Spec.Git.ReportOnly = true
	proposals, err := newWriter(t).Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(proposals).To(HaveLen(1))
	g.Expect(proposals[0].Outcome).To(Equal(refluxv1.ReportOnlyReason))
	branches := run(t, "", "git", "ls-remote", "--heads", srv.HTTPAddressWithCredentials()+"/shop.git")
	g.Expect(strings.Count(branches, "refs/heads/")).To(Equal(1), branches)
}

func TestGitChangedTheSameFieldIsAConflict(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	// Meanwhile a human changed the overlay's replicas in Git.
	dir := clone(t, srv, "main")
	path := filepath.Join(dir, "overlays/prod/kustomization.yaml")
	data, err := os.ReadFile(path)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(os.WriteFile(path, []byte(strings.Replace(string(data), "count: 4", "count: 5", 1)), 0o644)).To(Succeed())
	run(t, dir, "git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qam", "scale to 5")
	run(t, dir, "git", "push", "-q", "origin", "main")

	set := shopSet(url)
	proposals, err := newWriter(t).Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	alert := proposals[1]
	g.Expect(alert.Outcome).To(Equal(refluxv1.ConflictReason))
	g.Expect(alert.Reason).To(ContainSubstring("changed in Git"))
	heads := run(t, "", "git", "ls-remote", "--heads", srv.HTTPAddressWithCredentials()+"/shop.git")
	g.Expect(heads).ToNot(ContainSubstring("needs-decision"), "nothing is pushed on a conflict")
	// The Merge branch is unaffected.
	g.Expect(proposals[0].Outcome).To(Equal(refluxv1.BranchPushedReason))
}

func TestSecretsAndHotfixesAreNotWritten(t *testing.T) {
	g := NewWithT(t)
	_, url := gitServer(t)
	set := shopSet(url)
	secret := refluxv1.Drift{}
	secret.Name = "secret-db-1"
	secret.Spec.Object = refluxv1.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db"}
	secret.Spec.Fields = []refluxv1.DriftField{{Pointer: "/data/password", ChangeType: refluxv1.ChangeUpdate,
		GitValue: `"***"`, LiveValue: `"*** (after)"`, Action: refluxv1.MergeAction}}
	hotfix := set.Records[1].DeepCopy()
	hotfix.Spec.ManualHotfix = true
	set.Records = []refluxv1.Drift{secret, *hotfix}
	proposals, err := newWriter(t).Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(proposals).To(HaveLen(1), "the hotfix never reaches Git")
	g.Expect(proposals[0].Outcome).To(Equal(refluxv1.RefusedReason))
	g.Expect(proposals[0].Reason).To(ContainSubstring("SOPS"))
}

func TestServerDownIsAGitError(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	srv.StopHTTP()
	proposals, err := newWriter(t).Write(context.Background(), shopSet(url))
	g.Expect(err).To(HaveOccurred(), "a git error is returned so the caller backs off")
	g.Expect(proposals[0].Outcome).To(Equal(refluxv1.GitErrorReason))
}

func TestPolicyMessageTemplate(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	set := shopSet(url)
	set.Policy.Spec.Git.CommitMessageTemplate = "flags({{ .Kustomization }}): {{ len .Fields }} change(s) from the cluster"
	proposals, err := newWriter(t).Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	dir := clone(t, srv, proposals[0].Branch)
	msg := run(t, dir, "git", "log", "-1", "--format=%B")
	g.Expect(msg).To(HavePrefix("flags(flux-system/shop): 1 change(s) from the cluster"))
	g.Expect(msg).To(ContainSubstring("Reflux-Fingerprint:"), "trailers are kept whatever the template says")
}

// TestIntentIsRecordedBeforeThePush: the write intent names the branch
// before the branch exists, and a failing intent pushes nothing.
func TestIntentIsRecordedBeforeThePush(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	set := shopSet(url)
	type intent struct {
		branch, fingerprint string
		records             []string
		existed             bool
	}
	var intents []intent
	set.Intent = func(_ context.Context, branch, fingerprint string, records []string) error {
		heads := run(t, "", "git", "ls-remote", "--heads", srv.HTTPAddressWithCredentials()+"/shop.git")
		intents = append(intents, intent{branch, fingerprint, records, strings.Contains(heads, branch)})
		return nil
	}
	results, err := newWriter(t).Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(intents).To(HaveLen(2))
	for i, r := range results {
		g.Expect(intents[i].branch).To(Equal(r.Branch))
		g.Expect(intents[i].fingerprint).To(Equal(r.Fingerprint))
		g.Expect(intents[i].records).To(Equal(r.Records))
		g.Expect(intents[i].existed).To(BeFalse(), "recorded before the push")
	}

	// An intent that cannot be recorded stops the push: a GitError, retried.
	srv2, url2 := gitServer(t)
	set = shopSet(url2)
	set.Intent = func(context.Context, string, string, []string) error { return errors.New("apiserver unavailable") }
	results, err = newWriter(t).Write(context.Background(), set)
	g.Expect(err).To(HaveOccurred())
	g.Expect(results[0].Outcome).To(Equal(refluxv1.GitErrorReason))
	g.Expect(results[0].Reason).To(ContainSubstring("recording the write intent: apiserver unavailable"))
	heads := run(t, "", "git", "ls-remote", "--heads", srv2.HTTPAddressWithCredentials()+"/shop.git")
	g.Expect(heads).NotTo(ContainSubstring("reflux/"))
}

// TestCheckClosesOnlyPushedBranches: a deleted branch reflux pushed is a
// reviewer's rejection; a branch only recorded as an intent is not.
func TestCheckClosesOnlyPushedBranches(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	w := newWriter(t)
	set := shopSet(url)
	results, err := w.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	merge, alert := results[0], results[1]
	set.Records[0].Status.Branch, set.Records[0].Status.Commit = merge.Branch, merge.Commit
	set.Records[1].Status.Branch = alert.Branch // an intent whose push was never confirmed

	check, err := w.Check(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(check.Closed).To(BeEmpty(), "both branches are there")
	g.Expect(check.Pending).To(HaveLen(2))

	remote := srv.HTTPAddressWithCredentials() + "/shop.git"
	run(t, "", "git", "push", "-q", remote, "--delete", merge.Branch, alert.Branch)
	check, err = w.Check(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(check.Closed).To(HaveLen(1))
	g.Expect(check.Closed[0].Name).To(Equal(set.Records[0].Name))
	g.Expect(check.Closed[0].Reason).To(Equal(refluxv1.ClosedBranchDeletedReason))
	g.Expect(check.Closed[0].Message).To(ContainSubstring(merge.Branch))
	g.Expect(check.Pending).To(BeEmpty())
}

// TestWriteBuildsOncePerAttempt: with the applied revision's render at
// hand, a write-back of several fields renders the tree once, to verify
// the edits; without it, once more to read the tree first.
func TestWriteBuildsOncePerAttempt(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	head := strings.Fields(run(t, "", "git", "ls-remote", srv.HTTPAddressWithCredentials()+"/shop.git", "refs/heads/main"))[0]
	set := shopSet(url)
	set.Policy.Spec.Git.AlertBranches = "None"
	// Two Merge fields in two files: the flag and the overlay's replicas.
	set.Records[1].Spec.Fields[0].Action = refluxv1.MergeAction

	opts := kustomize.BuildOptions{Root: "testdata/shop", Kustomization: set.Spec}
	built, err := kustomize.Build(context.Background(), opts)
	g.Expect(err).NotTo(HaveOccurred())
	idx, err := origin.NewIndex(opts, built)
	g.Expect(err).NotTo(HaveOccurred())
	set.Render = &desired.Render{Revision: "main@sha1:" + head, Built: built, Index: idx}

	builds := 0
	w := newWriter(t)
	w.Render = func(ctx context.Context, o kustomize.BuildOptions) (*kustomize.Result, error) {
		builds++
		return kustomize.Build(ctx, o)
	}
	results, err := w.Write(context.Background(), set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(results).To(HaveLen(1))
	g.Expect(results[0].Outcome).To(Equal(refluxv1.BranchPushedReason), results[0].Reason)
	g.Expect(builds).To(Equal(1), "the applied render is the state before; one build verifies both edits")
	dir := clone(t, srv, results[0].Branch)
	g.Expect(strings.Fields(run(t, dir, "git", "diff", "--name-only", "origin/main", "HEAD"))).
		To(ConsistOf("base/kustomization.yaml", "overlays/prod/kustomization.yaml"))

	// A render of another commit is not this tree: it is rendered first.
	builds = 0
	set2 := shopSet(url)
	set2.Policy.Spec.Git.AlertBranches = "None"
	set2.Records[0].Spec.Fields[0].LiveValue = `"later"`
	set2.Render = &desired.Render{Revision: "main@sha1:0000000000000000000000000000000000000000", Built: built, Index: idx}
	_, err = w.Write(context.Background(), set2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(builds).To(Equal(2), "before and after")
}

// TestRemovalTheBuildRefusesLeavesTheRestWritten: a removal whose
// re-render fails (here the Deployment's name, without which kustomize
// does not build) is refused by name, and the set's other fields are still
// written, rather than the whole branch failing on every retry.
func TestRemovalTheBuildRefusesLeavesTheRestWritten(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	set := shopSet(url)
	flags := set.Records[0]
	removed := set.Records[1]
	removed.Spec.Fields = []refluxv1.DriftField{{
		Pointer: "/metadata/name", ChangeType: refluxv1.ChangeRemove, GitValue: `"checkout"`,
		Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, FirstSeen: flags.Spec.Fields[0].FirstSeen,
		Origin: &refluxv1.FieldOrigin{File: "base/deployment.yaml", Line: 4, Column: 9, Kind: "resource"},
	}}
	set.Records = []refluxv1.Drift{flags, removed}
	set.Fingerprint = reverse.Fingerprint(set.Records)

	proposals, err := newWriter(t).Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(proposals).To(HaveLen(1))
	p := proposals[0]
	g.Expect(p.Outcome).To(Equal(refluxv1.BranchPushedReason), p.Reason)
	g.Expect(p.Reason).To(ContainSubstring("/metadata/name"))
	g.Expect(p.Reason).To(ContainSubstring("removing it does not leave the render without it"))
	dir := clone(t, srv, p.Branch)
	g.Expect(strings.TrimSpace(run(t, dir, "git", "diff", "--name-only", "origin/main", "HEAD"))).To(Equal("base/kustomization.yaml"))
}
