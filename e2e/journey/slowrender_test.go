package journey

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// renderDelay is how long each render of the slow-render journey's
// reflux takes (its hidden --render-delay): far longer than the record of
// a change the render is not needed for.
const renderDelay = 45 * time.Second

// TestARecordDoesNotWaitForTheRender (issue 20 §1): a commit changes one
// file and Flux applies it; reflux's render of that revision is slow, as
// a tree of tens of thousands of objects is. A live change to an object
// the commit left alone is recorded while that render still runs, against
// the applied revision, from the render before it. A change to the object
// the commit changed is held and recorded at once as Pending, and filled
// in once the render lands.
func TestARecordDoesNotWaitForTheRender(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	r := fixture.StartReflux(t, env, fixture.Options{Name: "reflux-slow-render", Selector: shardKey + "=slow-render",
		Args: []string{"--render-delay=" + renderDelay.String()}})
	files := map[string]string{"kustomization.yaml": fixture.Kustomization("steady.yaml", "moving.yaml"),
		"steady.yaml": flagFiles("steady")["flags.yaml"], "moving.yaml": flagFiles("moving")["flags.yaml"]}
	f := fixture.NewApp(t, env, "slow-render", fixture.AppOptions{Labels: map[string]string{shardKey: "slow-render"}, Files: files})
	ks := f.Kustomization()
	builds := func() float64 { return renderBuilds(g, r, ks) }
	g.Expect(builds()).To(BeNumerically("==", 1), "the first revision is rendered")

	// The commit turns moving on; Flux applies it at once.
	dir := fixture.CloneBranch(t, env, f.Repo, "main")
	moving := filepath.Join(dir, "moving.yaml")
	body, err := os.ReadFile(moving)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(moving, []byte(strings.Replace(string(body), `"false"`, `"true"`, 1)), 0o600)).To(Succeed())
	fixture.Git(t, dir, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qam", "Turn moving on")
	fixture.Git(t, dir, "push", "-q", "origin", "main")
	head := fixture.Git(t, dir, "rev-parse", "HEAD")
	g.Expect(env.Reconcile(ctx, f.Source)).To(Succeed())
	f.Reconcile(g, ks.Name)
	g.Expect(ks.Status.LastAppliedRevision).To(HaveSuffix(head))
	g.Expect(f.ConfigMap(g, "moving").Data).To(HaveKeyWithValue("ENABLED", "true"))

	// steady's file did not change: recorded now, as of the applied
	// revision, while its render is still being built.
	f.AddKey(g, alice.Client, "steady", "HOTFIX", "on")
	rec := f.WaitRecord(g, "ConfigMap", "steady", fixture.HasField("/data/HOTFIX"))
	g.Expect(builds()).To(BeNumerically("==", 1), "recorded before the render of %s landed", ks.Status.LastAppliedRevision)
	g.Expect(rec.Spec.Revision).To(Equal(ks.Status.LastAppliedRevision))
	fl, err := fixture.Field(rec, "/data/HOTFIX")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fl.Modifier).NotTo(BeNil())
	g.Expect(fl.Modifier.Manager).To(Equal("kubectl-edit"))
	g.Expect(fixture.Held(f.Get(g, "steady", &corev1.ConfigMap{}))).To(BeTrue())

	// moving's file changed, so no render describes it as Flux applied
	// it: held at once, and recorded at once as Pending, with its writer
	// and what it wrote; filled in once the render of the applied
	// revision lands.
	f.AddKey(g, alice.Client, "moving", "HOTFIX", "on")
	pending := f.WaitRecord(g, "ConfigMap", "moving", fixture.InState(refluxv1.DriftPending))
	g.Expect(builds()).To(BeNumerically("==", 1), "recorded as pending before the render of %s landed", ks.Status.LastAppliedRevision)
	g.Expect(pending.Spec.Fields).To(BeEmpty(), "no render has said what diverges")
	g.Expect(pending.Spec.Revision).To(BeEmpty())
	g.Expect(pending.Spec.Written).To(ContainElement(refluxv1.WrittenField{Pointer: "/data/HOTFIX", LiveValue: `"on"`}))
	g.Expect(pending.Spec.LastModifier).NotTo(BeNil())
	g.Expect(pending.Spec.LastModifier.Manager).To(Equal("kubectl-edit"))
	g.Expect(pending.Status.HeldSince).NotTo(BeNil())
	g.Expect(fixture.Held(f.Get(g, "moving", &corev1.ConfigMap{}))).To(BeTrue())
	g.Eventually(func() string { return f.Condition(g, ks.Name, refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(ContainSubstring("1 live change(s) kept until it is current, 1 of them held"))

	// The fields are the record's spec and the state its status, two
	// writes: wait for both, or the spec may be seen before the status.
	rec = f.WaitRecord(g, "ConfigMap", "moving", func(d *refluxv1.Drift) error {
		if err := fixture.HasField("/data/HOTFIX")(d); err != nil {
			return err
		}
		return fixture.InState(refluxv1.DriftHeld)(d)
	})
	g.Expect(builds()).To(BeNumerically("==", 2), "filled in once the render landed")
	g.Expect(rec.Name).To(Equal(pending.Name), "the Pending record is filled in, not replaced")
	g.Expect(rec.Spec.Written).To(BeEmpty(), "the fields take over")
	g.Expect(rec.Spec.Revision).To(Equal(ks.Status.LastAppliedRevision))
	g.Expect(rec.Spec.Fields).To(HaveLen(1), "ENABLED=true is what Git declares now, not drift")
	g.Eventually(func() string { return f.Condition(g, ks.Name, refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/" + refluxv1.DriftDetectedReason))
}
