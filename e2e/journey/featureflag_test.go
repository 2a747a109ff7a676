package journey

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// editor writes an executable for KUBE_EDITOR that runs script with the
// file kubectl opens as $1.
func editor(t *testing.T, script string) string {
	path := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nset -e\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkProvenance reads the trailers of the branch's commit in dir with
// git's own parser: they name the record, the rule, the severity and the
// field manager of the live edit (docs/commit-trailers.md). The audited
// user is named when the audit event arrived before the commit was
// written, and never as a co-author.
func checkProvenance(t *testing.T, g Gomega, dir string, rec *refluxv1.Drift, fl refluxv1.DriftField) {
	t.Helper()
	parse := exec.Command("git", "interpret-trailers", "--parse")
	parse.Stdin = strings.NewReader(fixture.Git(t, dir, "log", "-1", "--format=%B"))
	out, err := parse.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	trailers := strings.Split(strings.TrimSpace(string(out)), "\n")
	g.Expect(trailers).To(ContainElements(
		"Reflux-Drift: "+rec.Namespace+"/"+rec.Name,
		"Reflux-Rule: "+fl.Rule,
		"Reflux-Severity: "+string(fl.Severity),
		"Reflux-Field-Manager: kubectl-edit",
	))
	for _, tr := range trailers {
		if strings.HasPrefix(tr, "Reflux-Edited-By: ") {
			g.Expect(tr).To(Equal("Reflux-Edited-By: " + aliceName))
		}
		g.Expect(tr).NotTo(HavePrefix("Co-authored-by"))
	}
}

// TestFeatureFlagBecomesASignedBranchAndResolvesOnMerge (scenario 1):
// `kubectl edit` adds a flag; a signed branch carries exactly that key at
// the line it belongs; a reviewer merges it; Flux applies it; Drifted goes
// False, the record is Resolved and reflux deletes its branch.
func TestFeatureFlagBecomesASignedBranchAndResolvesOnMerge(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	f := fixture.NewApp(t, env, "payments", fixture.AppOptions{Dir: "../drift/testdata/wb", Paths: map[string]string{"payments": "./base"},
		Signed: true, SourceInterval: resyncSource, Interval: resyncKustomization})
	ks := f.Kustomization()

	_, err := env.KubectlEditAs(ctx, alice.User, editor(t, `sed -i 's/^data:$/data:\n  INSTANT_REFUNDS: "true"/' "$1"`),
		"-n", f.Name, "configmap/payment-flags")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Get(g, "payment-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(HaveKeyWithValue("INSTANT_REFUNDS", "true"))

	rec := f.WaitRecord(g, "ConfigMap", "payment-flags", fixture.Pushed)
	fl, err := fixture.Field(rec, "/data/INSTANT_REFUNDS")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fl.Action).To(Equal(refluxv1.MergeAction))
	g.Expect(fl.Modifier).NotTo(BeNil())
	g.Expect(fl.Modifier.Manager).To(Equal("kubectl-edit"))
	g.Expect(fl.Origin).NotTo(BeNil())
	g.Expect(fl.Origin.File).To(Equal("base/flags.yaml"))
	g.Expect(fixture.Held(f.Get(g, "payment-flags", &corev1.ConfigMap{}))).To(BeTrue(), "a proposed drift stays held")
	branch := rec.Status.Branch
	g.Expect(fixture.Branches(t, env, f.Repo)).To(ConsistOf(branch))
	f.Consistent(t, g)

	// What a user sees: the condition, the event, the metrics.
	g.Eventually(func() string { return f.Condition(g, ks.Name, refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/" + refluxv1.DriftDetectedReason))
	ev := f.Event(g, refluxv1.BranchPushedReason, branch)
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-commit", rec.Status.Commit))
	g.Eventually(func() float64 {
		v, _ := fixture.Metric(g, suiteReflux.Process, "reflux_drift_fields",
			map[string]string{"namespace": f.Name, "kind": "ConfigMap", "action": "Merge"})
		return v
	}, fixture.Timeout, fixture.Interval).Should(BeNumerically("==", 1))
	pending, _ := fixture.Metric(g, suiteReflux.Process, "reflux_pending_branches", map[string]string{"namespace": f.Name})
	g.Expect(pending).To(BeNumerically("==", 1))

	// The branch: one signed commit adding exactly that key, on the line
	// after the last flag of payment-flags.
	dir := fixture.CloneBranch(t, env, f.Repo, branch)
	fixture.VerifySigned(t, dir, f.Key.Public)
	checkProvenance(t, g, dir, rec, fl)
	g.Expect(fixture.Git(t, dir, "diff", "--name-only", "origin/main", "HEAD")).To(Equal("base/flags.yaml"))
	hunks, added, removed := fixture.DiffLines(fixture.Git(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(added).To(Equal([]string{`  INSTANT_REFUNDS: "true"`}))
	g.Expect(removed).To(BeEmpty())
	orig, err := os.ReadFile("../drift/testdata/wb/base/flags.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	after := strings.Count(string(orig[:strings.Index(string(orig), "FALLBACK_PROVIDER")]), "\n") + 1
	g.Expect(hunks).To(ConsistOf(HavePrefix(fmt.Sprintf("@@ -%d,0 +%d @@", after, after+1))))
	g.Expect(fixture.Git(t, dir, "rev-list", "--count", "origin/main..HEAD")).To(Equal("1"))

	// A reviewer merges it; Flux applies the new revision.
	fixture.Merge(t, dir, branch)

	f.WaitRecord(g, "ConfigMap", "payment-flags", fixture.InState(refluxv1.DriftResolved))
	g.Eventually(func() string { return f.Condition(g, ks.Name, refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("False/" + refluxv1.NoDriftReason))
	g.Eventually(func() bool { return fixture.Held(f.Get(g, "payment-flags", &corev1.ConfigMap{})) }, fixture.Timeout, fixture.Interval).
		Should(BeFalse())
	g.Expect(f.Get(g, "payment-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(HaveKeyWithValue("INSTANT_REFUNDS", "true"))
	g.Eventually(func() []string { return fixture.Branches(t, env, f.Repo) }, fixture.Timeout, fixture.Interval).
		Should(BeEmpty(), "reflux deletes its merged branch")
	f.Consistent(t, g)
	f.Event(g, "DriftResolved", "payment-flags")
	g.Eventually(func() float64 {
		v, _ := fixture.Metric(g, suiteReflux.Process, "reflux_drift_fields",
			map[string]string{"namespace": f.Name, "kind": "ConfigMap", "action": "Merge"})
		return v
	}, fixture.Timeout, fixture.Interval).Should(BeZero())
}
