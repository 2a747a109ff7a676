package journey

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
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

// TestFeatureFlagBecomesASignedBranchAndResolvesOnMerge (scenario 1):
// `kubectl edit` adds a flag; a signed branch carries exactly that key at
// the line it belongs; a reviewer merges it; Flux applies it; Drifted goes
// False, the record is Resolved and reflux deletes its branch.
func TestFeatureFlagBecomesASignedBranchAndResolvesOnMerge(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, "payments", fixtureOptions{dir: "../drift/testdata/wb", paths: map[string]string{"payments": "./base"},
		signed: true, resync: true})
	ks := f.only()

	_, err := env.KubectlEditAs(ctx, alice, editor(t, `sed -i 's/^data:$/data:\n  INSTANT_REFUNDS: "true"/' "$1"`),
		"-n", f.name, "configmap/payment-flags")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.get(g, "payment-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(HaveKeyWithValue("INSTANT_REFUNDS", "true"))

	rec := f.waitRecord(g, "ConfigMap", "payment-flags", proposed)
	fl, err := field(rec, "/data/INSTANT_REFUNDS")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fl.Action).To(Equal(refluxv1.MergeAction))
	g.Expect(fl.Modifier).NotTo(BeNil())
	g.Expect(fl.Modifier.Manager).To(Equal("kubectl-edit"))
	g.Expect(fl.Origin).NotTo(BeNil())
	g.Expect(fl.Origin.File).To(Equal("base/flags.yaml"))
	g.Expect(isHeld(f.get(g, "payment-flags", &corev1.ConfigMap{}))).To(BeTrue(), "a proposed drift stays held")
	branch := rec.Status.Branch
	g.Expect(branches(t, f.repo)).To(ConsistOf(branch))
	f.consistent(t, g)

	// What a user sees: the condition, the event, the metrics.
	g.Eventually(func() string { return f.condition(g, ks.Name, refluxv1.DriftedCondition) }, timeout, interval).
		Should(HavePrefix("True/" + refluxv1.DriftDetectedReason))
	ev := f.event(g, refluxv1.BranchPushedReason, branch)
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-commit", rec.Status.Commit))
	g.Eventually(func() float64 {
		v, _ := metric(g, suiteReflux, "reflux_drift_fields", map[string]string{"namespace": f.name, "kind": "ConfigMap", "action": "Merge"})
		return v
	}, timeout, interval).Should(BeNumerically("==", 1))
	pending, _ := metric(g, suiteReflux, "reflux_pending_branches", map[string]string{"namespace": f.name})
	g.Expect(pending).To(BeNumerically("==", 1))

	// The branch: one signed commit adding exactly that key, on the line
	// after the last flag of payment-flags.
	dir := cloneBranch(t, f.repo, branch)
	verifySigned(t, dir, f.key.Public)
	g.Expect(gitCLI(t, dir, "diff", "--name-only", "origin/main", "HEAD")).To(Equal("base/flags.yaml"))
	hunks, added, removed := diffLines(gitCLI(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(added).To(Equal([]string{`  INSTANT_REFUNDS: "true"`}))
	g.Expect(removed).To(BeEmpty())
	orig, err := os.ReadFile("../drift/testdata/wb/base/flags.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	after := strings.Count(string(orig[:strings.Index(string(orig), "FALLBACK_PROVIDER")]), "\n") + 1
	g.Expect(hunks).To(ConsistOf(HavePrefix(fmt.Sprintf("@@ -%d,0 +%d @@", after, after+1))))
	g.Expect(gitCLI(t, dir, "rev-list", "--count", "origin/main..HEAD")).To(Equal("1"))

	// A reviewer merges it; Flux applies the new revision.
	gitCLI(t, dir, "checkout", "-q", "main")
	gitCLI(t, dir, "-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.com",
		"merge", "-q", "--no-ff", "-m", "Merge "+branch, branch)
	gitCLI(t, dir, "push", "-q", "origin", "main")

	f.waitRecord(g, "ConfigMap", "payment-flags", inState(refluxv1.DriftResolved))
	g.Eventually(func() string { return f.condition(g, ks.Name, refluxv1.DriftedCondition) }, timeout, interval).
		Should(HavePrefix("False/" + refluxv1.NoDriftReason))
	g.Eventually(func() bool { return isHeld(f.get(g, "payment-flags", &corev1.ConfigMap{})) }, timeout, interval).Should(BeFalse())
	g.Expect(f.get(g, "payment-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(HaveKeyWithValue("INSTANT_REFUNDS", "true"))
	g.Eventually(func() []string { return branches(t, f.repo) }, timeout, interval).Should(BeEmpty(), "reflux deletes its merged branch")
	f.consistent(t, g)
	f.event(g, "DriftResolved", "payment-flags")
	g.Eventually(func() float64 {
		v, _ := metric(g, suiteReflux, "reflux_drift_fields", map[string]string{"namespace": f.name, "kind": "ConfigMap", "action": "Merge"})
		return v
	}, timeout, interval).Should(BeZero())
}
