package journey

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// flagFiles is a repository of one Kustomization with a feature-flag
// ConfigMap per name.
func flagFiles(names ...string) map[string]string {
	files := map[string]string{"kustomization.yaml": fixture.Kustomization("flags.yaml")}
	var body string
	for _, n := range names {
		body += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + n + "\ndata:\n  ENABLED: \"false\"\n"
	}
	files["flags.yaml"] = body
	return files
}

// TestKilledRightAfterTheDriftIsSeen (scenario 7): reflux is killed with
// SIGKILL as soon as the drift is recorded. The next reflux process finds
// the record, keeps its first-seen time, loses nothing and pushes exactly
// one branch.
func TestKilledRightAfterTheDriftIsSeen(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	r := fixture.StartReflux(t, env, fixture.Options{Name: "reflux-restart", Selector: shardKey + "=restart"})
	f := fixture.NewApp(t, env, "restart", fixture.AppOptions{Labels: map[string]string{shardKey: "restart"},
		Files: flagFiles("checkout-flags")})

	f.AddKey(g, alice.Client, "checkout-flags", "ONE_CLICK", "true")
	var first refluxv1.Drift
	g.Eventually(func() int {
		recs := f.Records(g, "ConfigMap", "checkout-flags")
		if len(recs) == 1 {
			first = recs[0]
		}
		return len(recs)
	}, fixture.Timeout, 10*time.Millisecond).Should(Equal(1))
	g.Expect(r.Kill()).To(Succeed())
	killedAt := time.Now()
	fl0, err := fixture.Field(&first, "/data/ONE_CLICK")
	g.Expect(err).NotTo(HaveOccurred())

	fixture.StartReflux(t, env, fixture.Options{Name: "reflux-restart-2", Selector: shardKey + "=restart"})

	rec := f.WaitRecord(g, "ConfigMap", "checkout-flags", fixture.Pushed)
	g.Expect(rec.Name).To(Equal(first.Name), "the same record, not a second one")
	g.Expect(rec.Spec.FirstSeen.Time.Equal(first.Spec.FirstSeen.Time)).To(BeTrue(), "first seen %s, now %s", first.Spec.FirstSeen, rec.Spec.FirstSeen)
	g.Expect(rec.Spec.FirstSeen.Time.Before(killedAt)).To(BeTrue())
	fl, err := fixture.Field(rec, "/data/ONE_CLICK")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fl.FirstSeen.Equal(fl0.FirstSeen)).To(BeTrue(), "the divergence is as old as it was")
	g.Expect(fl.LiveValue).To(Equal(`"true"`))
	g.Expect(fixture.Held(f.Get(g, "checkout-flags", &corev1.ConfigMap{}))).To(BeTrue(), "nothing lost: the hold stands")
	g.Expect(f.Get(g, "checkout-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(HaveKeyWithValue("ONE_CLICK", "true"))
	g.Expect(fixture.Branches(t, env, f.Repo)).To(ConsistOf(rec.Status.Branch), "exactly one branch")
	g.Expect(f.Records(g, "ConfigMap", "checkout-flags")).To(HaveLen(1))
	dir := fixture.CloneBranch(t, env, f.Repo, rec.Status.Branch)
	_, added, _ := fixture.DiffLines(fixture.Git(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(added).To(Equal([]string{`  ONE_CLICK: "true"`}), "the branch carries the change")
}

// TestDeletedWhileRefluxWasDown (issue 22 §1): an object Flux applied is
// deleted while no reflux runs, so no watch sees it go. The next reflux
// finds it declared, in Flux's inventory and not live at its first
// resync, before Flux recreates it, and records the deletion: the whole
// object, removed, at the document that declares it. The object left
// alone gets no record, nor does a Secret, which reflux does not watch
// under --secrets=metadata (its absence from the live store says
// nothing), nor an object Git marks ssa: Ignore, which Flux never creates.
func TestDeletedWhileRefluxWasDown(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	r := fixture.StartReflux(t, env, fixture.Options{Name: "reflux-down", Selector: shardKey + "=down"})
	files := flagFiles("kept-flags", "deleted-flags")
	files["kustomization.yaml"] = fixture.Kustomization("flags.yaml", "payments-api.yaml", "ignored.yaml")
	files["payments-api.yaml"] = paymentsSecretYAML
	// Flux never creates an object Git marks ssa: Ignore, yet lists it.
	files["ignored.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ignored-flags\n  annotations:\n" +
		"    kustomize.toolkit.fluxcd.io/ssa: Ignore\ndata:\n  ENABLED: \"false\"\n"
	f := fixture.NewApp(t, env, "down", fixture.AppOptions{Labels: map[string]string{shardKey: "down"}, Files: files})
	g.Expect(r.Stop()).To(Succeed())

	g.Expect(alice.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.Name, Name: "deleted-flags"}})).
		To(Succeed())
	fixture.StartReflux(t, env, fixture.Options{Name: "reflux-down-2", Selector: shardKey + "=down"})

	rec := f.WaitRecord(g, "ConfigMap", "deleted-flags", fixture.HasField(refluxv1.WholeObjectPointer))
	g.Expect(rec.Spec.Fields).To(HaveLen(1))
	fl := rec.Spec.Fields[0]
	g.Expect(fl.ChangeType).To(Equal(refluxv1.ChangeRemove))
	g.Expect(fl.Origin).NotTo(BeNil())
	g.Expect(fl.Origin.File).To(Equal("flags.yaml"))
	g.Expect(f.Records(g, "ConfigMap", "kept-flags")).To(BeEmpty(), "nothing happened to it")
	g.Consistently(func() []refluxv1.Drift { return f.Records(g, "Secret", "payments-api") }, 3*time.Second, 250*time.Millisecond).
		Should(BeEmpty(), "a Secret reflux does not watch is not taken for deleted")
	g.Expect(f.Records(g, "ConfigMap", "ignored-flags")).To(BeEmpty(), "nor is an object Flux never applies")
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.Name, Name: "deleted-flags"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "recorded before Flux's next reconcile recreates it: %v", err)
}

// TestEditedWhileRefluxWasDownIsHeldBeforeItsRender (issue 22 §1): alice
// edits an object while no reflux runs, so no watch sees the edit. The
// next reflux's first render is held back (its hidden
// --render-gate-file), as a large tree's takes minutes. The edit is held
// and recorded as Pending from the watch's first list, before any render,
// so that Flux's next reconcile cannot erase it meanwhile; once the render
// lands, the record says what changed.
func TestEditedWhileRefluxWasDownIsHeldBeforeItsRender(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	r := fixture.StartReflux(t, env, fixture.Options{Name: "reflux-down-edit", Selector: shardKey + "=down-edit"})
	f := fixture.NewApp(t, env, "down-edit", fixture.AppOptions{Labels: map[string]string{shardKey: "down-edit"},
		Files: flagFiles("edited-flags", "other-flags")})
	g.Expect(r.Stop()).To(Succeed())

	f.AddKey(g, alice.Client, "edited-flags", "HOTFIX", "on")
	gate := filepath.Join(t.TempDir(), "hold-renders")
	g.Expect(os.WriteFile(gate, nil, 0o600)).To(Succeed())
	fixture.StartReflux(t, env, fixture.Options{Name: "reflux-down-edit-2", Selector: shardKey + "=down-edit",
		Args: []string{"--render-gate-file=" + gate}})

	rec := f.WaitRecord(g, "ConfigMap", "edited-flags", fixture.InState(refluxv1.DriftPending))
	g.Expect(rec.Spec.Written).To(ContainElement(refluxv1.WrittenField{Pointer: "/data/HOTFIX", LiveValue: `"on"`}))
	g.Eventually(func() bool { return fixture.Held(f.Get(g, "edited-flags", &corev1.ConfigMap{})) }, fixture.Timeout, fixture.Interval).
		Should(BeTrue(), "held before any render")
	g.Expect(fixture.Held(f.Get(g, "other-flags", &corev1.ConfigMap{}))).To(BeFalse(), "only what someone edited")
	g.Expect(f.Records(g, "ConfigMap", "other-flags")).To(BeEmpty())

	g.Expect(os.Remove(gate)).To(Succeed())
	rec = f.WaitRecord(g, "ConfigMap", "edited-flags", fixture.All(fixture.HasField("/data/HOTFIX"), notPending))
	g.Expect(f.Get(g, "edited-flags", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).To(HaveKeyWithValue("HOTFIX", "on"),
		"nothing lost")
}

// TestDeletionBeforeItsRenderOutlivesItsReflux (issue 22 §1): alice
// deletes an object while reflux's render is not current (held back with
// the gate file, as a large tree's takes minutes). The deletion is written
// down at once as a Pending record, as an edit is; reflux then dies before
// any render, and Flux recreates the object. The next reflux decides the
// deletion from that record once its render lands: the whole object,
// removed, at the document that declares it. Kept in memory only, as
// before, the deletion died with the process (the soak lost most of its
// deletions so).
func TestDeletionBeforeItsRenderOutlivesItsReflux(t *testing.T) {
	t.Parallel()
	deletionOutlivesReflux(t, "del-pending", nil)
}

// TestDeletionTheAuditLogNeverNamesOutlivesItsReflux (issue 22 §1): as
// above, with an audit webhook that nothing sends to, as when the audit
// log is late or lost. Once its looks at the audit log are spent, the
// deletion is written down as Pending with no deleter, as without an
// audit log; it used to stay in the process only, waiting for a deleter
// the audit log never named, and died with it.
func TestDeletionTheAuditLogNeverNamesOutlivesItsReflux(t *testing.T) {
	t.Parallel()
	deletionOutlivesReflux(t, "del-silent", []string{"--audit-addr=127.0.0.1:0"})
}

// deletionOutlivesReflux deletes an object while the render of a reflux
// started with args is held back, kills that reflux once the deletion is
// recorded as Pending, lets Flux recreate the object, and checks that
// the next reflux records the removal.
func deletionOutlivesReflux(t *testing.T, name string, args []string) {
	g := NewWithT(t)
	ctx := context.Background()
	opts := fixture.Options{Name: "reflux-" + name, Selector: shardKey + "=" + name}
	r := fixture.StartReflux(t, env, opts)
	f := fixture.NewApp(t, env, name, fixture.AppOptions{Labels: map[string]string{shardKey: name},
		Files: flagFiles("gone-flags", "probe-flags")})
	g.Expect(r.Stop()).To(Succeed())

	gate := filepath.Join(t.TempDir(), "hold-renders")
	g.Expect(os.WriteFile(gate, nil, 0o600)).To(Succeed())
	gated := opts
	gated.Name, gated.Args = "reflux-"+name+"-2", append([]string{"--render-gate-file=" + gate}, args...)
	r2 := fixture.StartReflux(t, env, gated)
	// An edit first: its Pending record says the watches run.
	f.AddKey(g, alice.Client, "probe-flags", "PROBE", "on")
	f.WaitRecord(g, "ConfigMap", "probe-flags", fixture.InState(refluxv1.DriftPending))

	g.Expect(alice.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.Name, Name: "gone-flags"}})).
		To(Succeed())
	rec := f.WaitRecord(g, "ConfigMap", "gone-flags", fixture.InState(refluxv1.DriftPending))
	g.Expect(rec.Spec.LastModifier).NotTo(BeNil())
	g.Expect(rec.Spec.LastModifier.Operation).To(Equal(refluxv1.DeleteOperation))
	g.Expect(rec.Spec.Fields).To(BeEmpty(), "its Git side waits for the render")

	// reflux dies before any render; Flux recreates the object.
	g.Expect(r2.Kill()).To(Succeed())
	f.Reconcile(g, name)
	f.ConfigMap(g, "gone-flags")

	g.Expect(os.Remove(gate)).To(Succeed())
	third := opts
	third.Name = "reflux-" + name + "-3"
	fixture.StartReflux(t, env, third)
	rec = f.WaitRecord(g, "ConfigMap", "gone-flags", fixture.All(fixture.HasField(refluxv1.WholeObjectPointer), notPending))
	g.Expect(rec.Spec.Fields).To(HaveLen(1))
	fl := rec.Spec.Fields[0]
	g.Expect(fl.ChangeType).To(Equal(refluxv1.ChangeRemove))
	g.Expect(fl.DeletesObject()).To(BeTrue())
	g.Expect(fl.Origin).NotTo(BeNil())
	g.Expect(fl.Origin.File).To(Equal("flags.yaml"))
}

// notPending matches a record its render filled in: the spec and the
// status are two writes, so a record may show its fields while its status
// still says Pending.
func notPending(d *refluxv1.Drift) error {
	if d.Status.State == refluxv1.DriftPending {
		return errors.New("still Pending")
	}
	return nil
}
