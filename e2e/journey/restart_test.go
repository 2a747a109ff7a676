package journey

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// flagFiles is a repository of one Kustomization with a feature-flag
// ConfigMap per name.
func flagFiles(names ...string) map[string]string {
	files := map[string]string{"kustomization.yaml": kustomizationYAML + "  - flags.yaml\n"}
	var body string
	for _, n := range names {
		body += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + n + "\ndata:\n  ENABLED: \"false\"\n"
	}
	files["flags.yaml"] = body
	return files
}

// addKey adds a key to a live ConfigMap as alice's `kubectl edit` does.
func (f *fixture) addKey(g Gomega, name, key, value string) {
	cm := f.get(g, name, &corev1.ConfigMap{}).(*corev1.ConfigMap)
	cm.Data[key] = value
	g.Expect(aliceC.Update(context.Background(), cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
}

// TestKilledRightAfterTheDriftIsSeen (scenario 7): reflux is killed with
// SIGKILL as soon as the drift is recorded. The next reflux process finds
// the record, keeps its first-seen time, loses nothing and pushes exactly
// one branch.
func TestKilledRightAfterTheDriftIsSeen(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	stopAtEnd := func(r *testenv.RefluxProcess) {
		t.Cleanup(func() {
			if err := r.Stop(); err != nil {
				t.Error(err)
			}
		})
	}
	r, err := startReflux(ctx, "reflux-restart", shardKey+"=restart")
	g.Expect(err).NotTo(HaveOccurred())
	stopAtEnd(r)
	f := newFixture(t, "restart", fixtureOptions{shard: "restart", files: flagFiles("checkout-flags")})

	f.addKey(g, "checkout-flags", "ONE_CLICK", "true")
	var first refluxv1.Drift
	g.Eventually(func() int {
		recs := f.records(g, "ConfigMap", "checkout-flags")
		if len(recs) == 1 {
			first = recs[0]
		}
		return len(recs)
	}, timeout, 10*time.Millisecond).Should(Equal(1))
	g.Expect(r.Kill()).To(Succeed())
	killedAt := time.Now()
	fl0, err := field(&first, "/data/ONE_CLICK")
	g.Expect(err).NotTo(HaveOccurred())

	restarted, err := startReflux(ctx, "reflux-restart-2", shardKey+"=restart")
	g.Expect(err).NotTo(HaveOccurred())
	stopAtEnd(restarted)

	rec := f.waitRecord(g, "ConfigMap", "checkout-flags", proposed)
	g.Expect(rec.Name).To(Equal(first.Name), "the same record, not a second one")
	g.Expect(rec.Spec.FirstSeen.Time.Equal(first.Spec.FirstSeen.Time)).To(BeTrue(), "first seen %s, now %s", first.Spec.FirstSeen, rec.Spec.FirstSeen)
	g.Expect(rec.Spec.FirstSeen.Time.Before(killedAt)).To(BeTrue())
	fl, err := field(rec, "/data/ONE_CLICK")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fl.FirstSeen.Equal(fl0.FirstSeen)).To(BeTrue(), "the divergence is as old as it was")
	g.Expect(fl.LiveValue).To(Equal(`"true"`))
	g.Expect(isHeld(f.get(g, "checkout-flags", &corev1.ConfigMap{}))).To(BeTrue(), "nothing lost: the hold stands")
	g.Expect(f.get(g, "checkout-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(HaveKeyWithValue("ONE_CLICK", "true"))
	g.Expect(branches(t, f.repo)).To(ConsistOf(rec.Status.Branch), "exactly one branch")
	g.Expect(f.records(g, "ConfigMap", "checkout-flags")).To(HaveLen(1))
	dir := cloneBranch(t, f.repo, rec.Status.Branch)
	_, added, _ := diffLines(gitCLI(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(added).To(Equal([]string{`  ONE_CLICK: "true"`}), "the branch carries the change")
}
