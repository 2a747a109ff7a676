package journey

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// checkoutFlagsYAML is the flags file the removal journey edits; every
// comment in it must survive the write-back.
const checkoutFlagsYAML = `# Feature flags the checkout service reads at start.
apiVersion: v1
kind: ConfigMap
metadata:
  name: checkout-flags
data:
  # Dark mode for the new UI.
  DARK_MODE: "true"
  LEGACY_CHECKOUT: "on"   # retire after the Q4 freeze
  # Payments v2 rollout, off until the provider signs off.
  PAYMENTS_V2: "false"
`

// TestRemovedFieldIsWrittenBackAsADeletion (issue 11 §5): a key Git
// declares, removed live, is a Remove drift; a rule that merges removals
// sends it back as the minimal deletion at its origin: one line gone from
// the file that declares it, every comment kept, signed and verified by
// re-render. Merging the branch resolves the record.
func TestRemovedFieldIsWrittenBackAsADeletion(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, "removed", fixtureOptions{
		files: map[string]string{
			"kustomization.yaml": kustomizationYAML + "  - flags.yaml\n",
			"flags.yaml":         checkoutFlagsYAML,
		},
		signed: true, resync: true,
		rules: []refluxv1.Rule{{Name: "retired-flags", Kinds: []string{"ConfigMap"},
			ChangeTypes: []refluxv1.ChangeType{refluxv1.ChangeRemove}, Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow}},
	})
	ks := f.only()

	_, err := env.KubectlAs(ctx, alice, "-n", f.name, "patch", "configmap/checkout-flags", "--type=json",
		"-p", `[{"op":"remove","path":"/data/LEGACY_CHECKOUT"}]`)
	g.Expect(err).NotTo(HaveOccurred())

	rec := f.waitRecord(g, "ConfigMap", "checkout-flags", func(d *refluxv1.Drift) error {
		if fl, err := field(d, "/data/LEGACY_CHECKOUT"); err != nil || fl.Modifier == nil || fl.Modifier.User == "" {
			return fmt.Errorf("the removal is not attributed yet (%v)", err)
		}
		return proposed(d)
	})
	fl, err := field(rec, "/data/LEGACY_CHECKOUT")
	g.Expect(err).NotTo(HaveOccurred())
	// A removal leaves no managedFields entry: the audit log names alice
	// (issue 17 §3).
	g.Expect(fl.Modifier.User).To(Equal(aliceName))
	g.Expect(fl.Modifier.Manager).To(Equal("kubectl-patch"))
	g.Expect(fl.ChangeType).To(Equal(refluxv1.ChangeRemove))
	g.Expect(fl.GitValue).To(Equal(`"on"`))
	g.Expect(fl.Action).To(Equal(refluxv1.MergeAction))
	g.Expect(fl.Rule).To(Equal("retired-flags"))
	g.Expect(fl.Origin).NotTo(BeNil())
	g.Expect(fl.Origin.File).To(Equal("flags.yaml"))
	g.Expect(fl.Origin.Line).To(BeEquivalentTo(9))
	g.Expect(isHeld(f.get(g, "checkout-flags", &corev1.ConfigMap{}))).To(BeTrue(), "held while the removal is proposed")
	f.reconcile(g, ks.Name)
	g.Expect(f.get(g, "checkout-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).NotTo(HaveKey("LEGACY_CHECKOUT"),
		"Flux leaves the held object alone")

	// The branch: one signed commit deleting exactly that line.
	branch := rec.Status.Branch
	dir := cloneBranch(t, f.repo, branch)
	verifySigned(t, dir, f.key.Public)
	g.Expect(gitCLI(t, dir, "diff", "--name-only", "origin/main", "HEAD")).To(Equal("flags.yaml"))
	hunks, added, removed := diffLines(gitCLI(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(removed).To(Equal([]string{`  LEGACY_CHECKOUT: "on"   # retire after the Q4 freeze`}))
	g.Expect(added).To(BeEmpty())
	g.Expect(hunks).To(ConsistOf(HavePrefix("@@ -9 +8,0 @@")))
	g.Expect(gitCLI(t, dir, "show", "HEAD:flags.yaml")).To(ContainSubstring("# Payments v2 rollout, off until the provider signs off."))
	f.consistent(t, g)

	// A reviewer merges it; Flux applies a revision without the key.
	gitCLI(t, dir, "checkout", "-q", "main")
	gitCLI(t, dir, "-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.com",
		"merge", "-q", "--no-ff", "-m", "Merge "+branch, branch)
	gitCLI(t, dir, "push", "-q", "origin", "main")
	f.waitRecord(g, "ConfigMap", "checkout-flags", inState(refluxv1.DriftResolved))
	g.Eventually(func() bool { return isHeld(f.get(g, "checkout-flags", &corev1.ConfigMap{})) }, timeout, interval).Should(BeFalse())
	g.Expect(f.get(g, "checkout-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(
		And(Not(HaveKey("LEGACY_CHECKOUT")), HaveKeyWithValue("DARK_MODE", "true")))
	g.Eventually(func() []string { return branches(t, f.repo) }, timeout, interval).Should(BeEmpty(), "reflux deletes its merged branch")
}
