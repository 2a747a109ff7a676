package journey

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestAnnotatedManualHotfixIsLoggedHeldAndNeverBranched (scenario 3): a
// change that declares itself a manual hotfix (ops.source=manual) is logged,
// announced with a Normal event and held, and never written to Git.
func TestAnnotatedManualHotfixIsLoggedHeldAndNeverBranched(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	f := fixture.NewApp(t, env, "hotfix", fixture.AppOptions{Files: fixture.OneFile("worker.yaml", workerYAML)})
	ks := f.Kustomization()
	before := env.Git.Requests(f.Repo)
	_, err := env.KubectlAs(ctx, alice.User, "-n", f.Name, "patch", "deployment/worker", "--type=merge",
		"-p", `{"metadata":{"annotations":{"ops.source":"manual"}},"spec":{"replicas":4}}`)
	g.Expect(err).NotTo(HaveOccurred())

	rec := f.WaitRecord(g, "Deployment", "worker", fixture.InState(refluxv1.DriftHeld))
	g.Expect(rec.Spec.ManualHotfix).To(BeTrue())
	// What `kubectl get drifts` shows: held, and a hotfix, not Ignore; the
	// fingerprint is its fields', not the hash of nothing (issue 17 §4).
	g.Expect(rec.Status.Action).To(Equal(refluxv1.DriftManualHotfix))
	g.Expect(rec.Status.Fingerprint).To(HaveLen(12))
	g.Expect(rec.Status.Fingerprint).NotTo(Equal("e3b0c44298fc"))
	g.Expect(rec.Spec.Fields).NotTo(BeEmpty())
	for _, fl := range rec.Spec.Fields {
		g.Expect(fl.Action).To(Equal(refluxv1.IgnoreAction), fl.Pointer)
		g.Expect(fl.Rule).To(Equal("manual-hotfix"), fl.Pointer)
	}
	ev := f.Event(g, "ManualHotfix", "worker")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeNormal))
	g.Eventually(func() (string, error) {
		b, err := suiteReflux.Log()
		return string(b), err
	}, fixture.Timeout, fixture.Interval).Should(ContainSubstring(`"record": "` + rec.Name + `"`))
	log, err := suiteReflux.Log()
	g.Expect(err).NotTo(HaveOccurred())
	var line string
	for l := range strings.Lines(string(log)) {
		if strings.Contains(l, `"record": "`+rec.Name+`"`) && strings.Contains(l, "drift recorded") {
			line = l
		}
	}
	g.Expect(line).To(ContainSubstring(`"manualHotfix": true`), "the hotfix is logged as one")

	g.Expect(fixture.Held(f.Get(g, "worker", &appsv1.Deployment{}))).To(BeTrue())
	f.Reconcile(g, ks.Name)
	g.Expect(*f.Get(g, "worker", &appsv1.Deployment{}).(*appsv1.Deployment).Spec.Replicas).To(BeEquivalentTo(4), "held against Flux")
	// No branch, now or at the next write-back chance.
	g.Consistently(func() []string { return fixture.Branches(t, env, f.Repo) }, 3*time.Second, 500*time.Millisecond).Should(BeEmpty())
	g.Expect(env.Git.Requests(f.Repo).Sub(before).ReceivePack).To(BeZero(), "nothing was pushed")
}
