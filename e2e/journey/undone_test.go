package journey

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestAnEditFluxUndoesBeforeItIsLookedAtIsRecorded (issue 22 §1): alice
// adds a key while reflux cannot look (paused with SIGSTOP, as a process
// the machine starves, or a worker queue behind a burst), and Flux's
// apply takes it off again. Resumed, reflux's watch delivers her edit
// and Flux's revert one after the other, and the object its cache holds
// has nothing of the change: only the object the watch delivered with
// the edit says what was written. The soak lost such edits ("record has
// no field", "Merge flag on no branch"). The record lists the key with
// alice's value, nothing is held, for nothing is live to hold, and the
// Merge rule's branch carries it.
//
// It runs alone, not beside the package's parallel tests. The paused
// reflux's ConfigMap watch spans every test's objects, and their churn
// while it is paused can fill its watch until the apiserver drops it;
// relisted, the watch delivers Flux's revert and never alice's edit
// (one CI run in four: the edit was never seen, only Flux's write).
// That loss is the watch's, not the change's evaluation's, and a
// watch cannot recover it: the audit log names the writer of such an
// edit but not its values (stop 44's note).
func TestAnEditFluxUndoesBeforeItIsLookedAtIsRecorded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	r := fixture.StartReflux(t, env, fixture.Options{Name: "reflux-undone", Selector: shardKey + "=undone"})
	f := fixture.NewApp(t, env, "undone", fixture.AppOptions{Labels: map[string]string{shardKey: "undone"},
		Files: flagFiles("undone-flags")})

	g.Expect(r.Pause()).To(Succeed())
	var once sync.Once
	resume := func() { once.Do(func() { g.Expect(r.Continue()).To(Succeed()) }) }
	t.Cleanup(resume)
	f.AddKey(g, alice.Client, "undone-flags", "ONE_CLICK", "true")
	g.Expect(env.Reconcile(ctx, f.Kustomization())).To(Succeed())
	g.Eventually(func() map[string]string {
		return f.Get(g, "undone-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data
	}, fixture.Timeout, fixture.Interval).ShouldNot(HaveKey("ONE_CLICK"), "Flux took the key off")
	resume()

	rec := f.WaitRecord(g, "ConfigMap", "undone-flags", fixture.HasField("/data/ONE_CLICK"))
	fl, _ := fixture.Field(rec, "/data/ONE_CLICK")
	g.Expect(fl.ChangeType).To(Equal(refluxv1.ChangeAdd))
	g.Expect(fl.LiveValue).To(Equal(`"true"`), "what alice wrote, from the watch")
	g.Expect(fl.Modifier).NotTo(BeNil())
	g.Expect(fl.Modifier.Manager).To(Equal("kubectl-edit"))
	g.Expect(fixture.Held(f.Get(g, "undone-flags", &corev1.ConfigMap{}))).To(BeFalse(), "nothing live to hold")
	f.WaitRecord(g, "ConfigMap", "undone-flags", fixture.Pushed)
}
