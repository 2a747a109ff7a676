package drift

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestMergeDriftBecomesASignedBranchAndResolvesOnMerge follows a new flag
// from `kubectl edit` to a signed branch, through a reviewer's merge and
// Flux applying it, to the record resolving and reflux deleting its branch.
func TestMergeDriftBecomesASignedBranchAndResolvesOnMerge(t *testing.T) {
	g := NewWithT(t)
	// alice's flag, held, and still there after a reconcile of Flux that
	// began after the hold.
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = payments.Name, "payment-flags"
	fixture.HeldEdit(g, env, alice.Client, "kubectl-edit", payments.Kustomization(), cm,
		func() { cm.Data["INSTANT_REFUNDS"] = "true" })

	rec := payments.WaitRecord(g, "ConfigMap", "payment-flags", fixture.Pushed)
	branch := rec.Status.Branch
	g.Expect(branch).To(HavePrefix("reflux/payments-payments/"))
	g.Expect(fixture.Held(payments.ConfigMap(g, "payment-flags"))).To(BeTrue(), "a proposed drift stays held")

	k := payments.Kustomization().DeepCopy()
	g.Eventually(func() string {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(k), k)
		if c := conditions.Get(k, refluxv1.ReverseSyncedCondition); c != nil && c.Status == "True" {
			return c.Message
		}
		return ""
	}, timeout, interval).Should(ContainSubstring(branch), "BranchPushed, then UpToDate at the next resync")
	ev := payments.Event(g, refluxv1.BranchPushedReason, "")
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-branch", branch))
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-commit", rec.Status.Commit))

	// The policy lists the branch as pending review.
	p := &refluxv1.ReverseSyncPolicy{}
	g.Eventually(func() []refluxv1.PendingBranch {
		_ = env.Client.Get(context.Background(), client.ObjectKey{Namespace: payments.Name, Name: "payments"}, p)
		return p.Status.PendingBranches
	}, timeout, interval).Should(ContainElement(HaveField("Branch", branch)))

	// The branch holds one signed commit with the minimal edit, comments kept.
	dir := t.TempDir()
	fixture.Git(t, "", "clone", "-q", "-b", branch, fixture.GitURL(env, payments.Repo), dir)
	flags, err := os.ReadFile(filepath.Join(dir, "base/flags.yaml"))
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(flags)).To(ContainSubstring("  # keep the old provider as fallback\n  FALLBACK_PROVIDER: \"true\"\n  INSTANT_REFUNDS: \"true\"\n"))
	g.Expect(fixture.Git(t, dir, "diff", "--name-only", "origin/main", "HEAD")).To(Equal("base/flags.yaml"))
	g.Expect(fixture.Git(t, dir, "log", "-1", "--format=%B")).To(ContainSubstring("/data/INSTANT_REFUNDS"))
	fixture.VerifySigned(t, dir, payments.Key.Public)

	// A reviewer merges the branch; Flux applies the new revision.
	fixture.Merge(t, dir, branch)

	payments.WaitRecord(g, "ConfigMap", "payment-flags", fixture.InState(refluxv1.DriftResolved))
	g.Eventually(func() bool { return fixture.Held(payments.ConfigMap(g, "payment-flags")) }, timeout, interval).Should(BeFalse())
	g.Expect(payments.ConfigMap(g, "payment-flags").Data).To(HaveKeyWithValue("INSTANT_REFUNDS", "true"))
	// reflux deletes its merged branch.
	g.Eventually(func() []string { return fixture.Branches(t, env, payments.Repo) }, timeout, interval).ShouldNot(ContainElement(branch))
}

// TestDeletedBranchDismissesTheDrift: a reviewer closes the proposal by
// deleting its branch; the hold goes and Flux restores Git's value.
func TestDeletedBranchDismissesTheDrift(t *testing.T) {
	g := NewWithT(t)
	cm := payments.ConfigMap(g, "search-flags")
	cm.Data["SEMANTIC_SEARCH"] = "true"
	editAsAlice(g, cm, "kubectl-edit")
	rec := payments.WaitRecord(g, "ConfigMap", "search-flags", fixture.InState(refluxv1.DriftProposed))
	fixture.Git(t, "", "push", "-q", fixture.GitURL(env, payments.Repo), "--delete", rec.Status.Branch)

	payments.WaitRecord(g, "ConfigMap", "search-flags", fixture.InState(refluxv1.DriftDismissed))
	g.Eventually(func() map[string]string { return payments.ConfigMap(g, "search-flags").Data }, timeout, interval).
		ShouldNot(HaveKey("SEMANTIC_SEARCH"), func() string {
			cm := payments.ConfigMap(g, "search-flags")
			var out []string
			for _, mf := range cm.ManagedFields {
				out = append(out, fmt.Sprintf("%s/%s %s", mf.Manager, mf.Operation, mf.FieldsV1.String()))
			}
			return "Flux restored Git's value; managedFields: " + strings.Join(out, " | ") + fmt.Sprintf(" annotations %v", cm.Annotations)
		})
	g.Expect(fixture.Held(payments.ConfigMap(g, "search-flags"))).To(BeFalse())
}
