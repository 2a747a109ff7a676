package journey

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
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
	f := fixture.NewApp(t, env, "removed", fixture.AppOptions{
		Files:  fixture.OneFile("flags.yaml", checkoutFlagsYAML),
		Signed: true, SourceInterval: resyncSource, Interval: resyncKustomization,
		Rules: []refluxv1.Rule{{Name: "retired-flags", Kinds: []string{"ConfigMap"},
			ChangeTypes: []refluxv1.ChangeType{refluxv1.ChangeRemove}, Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow}},
	})
	ks := f.Kustomization()

	_, err := env.KubectlAs(ctx, alice.User, "-n", f.Name, "patch", "configmap/checkout-flags", "--type=json",
		"-p", `[{"op":"remove","path":"/data/LEGACY_CHECKOUT"}]`)
	g.Expect(err).NotTo(HaveOccurred())

	rec := f.WaitRecord(g, "ConfigMap", "checkout-flags", fixture.All(fixture.Attributed("/data/LEGACY_CHECKOUT"), fixture.Pushed))
	fl, err := fixture.Field(rec, "/data/LEGACY_CHECKOUT")
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
	g.Expect(fixture.Held(f.Get(g, "checkout-flags", &corev1.ConfigMap{}))).To(BeTrue(), "held while the removal is proposed")
	f.Reconcile(g, ks.Name)
	g.Expect(f.Get(g, "checkout-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).NotTo(HaveKey("LEGACY_CHECKOUT"),
		"Flux leaves the held object alone")

	// The branch: one signed commit deleting exactly that line.
	branch := rec.Status.Branch
	dir := fixture.CloneBranch(t, env, f.Repo, branch)
	fixture.VerifySigned(t, dir, f.Key.Public)
	g.Expect(fixture.Git(t, dir, "diff", "--name-only", "origin/main", "HEAD")).To(Equal("flags.yaml"))
	hunks, added, removed := fixture.DiffLines(fixture.Git(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(removed).To(Equal([]string{`  LEGACY_CHECKOUT: "on"   # retire after the Q4 freeze`}))
	g.Expect(added).To(BeEmpty())
	g.Expect(hunks).To(ConsistOf(HavePrefix("@@ -9 +8,0 @@")))
	g.Expect(fixture.Git(t, dir, "show", "HEAD:flags.yaml")).To(ContainSubstring("# Payments v2 rollout, off until the provider signs off."))
	f.Consistent(t, g)

	// A reviewer merges it; Flux applies a revision without the key.
	fixture.Merge(t, dir, branch)
	f.WaitRecord(g, "ConfigMap", "checkout-flags", fixture.InState(refluxv1.DriftResolved))
	g.Eventually(func() bool { return fixture.Held(f.Get(g, "checkout-flags", &corev1.ConfigMap{})) }, fixture.Timeout, fixture.Interval).
		Should(BeFalse())
	g.Expect(f.Get(g, "checkout-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(
		And(Not(HaveKey("LEGACY_CHECKOUT")), HaveKeyWithValue("DARK_MODE", "true")))
	g.Eventually(func() []string { return fixture.Branches(t, env, f.Repo) }, fixture.Timeout, fixture.Interval).
		Should(BeEmpty(), "reflux deletes its merged branch")
}
