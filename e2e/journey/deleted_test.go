package journey

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// settingsYAML declares the ConfigMap the deletion journey deletes; its
// name is on line 5.
const settingsYAML = "# Settings the payments API reads at start.\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  MODE: live\n"

// TestDeletedObjectIsRecordedAndFluxRecreatesIt (issue 11 §5): a
// `kubectl delete` of an object Flux applied is drift of the whole object:
// a record with change type Remove at the document that declares it, the
// user who deleted it from the audit log, a high Alert and a Warning
// event, and no hold. Flux recreates the object at its next reconcile and
// the record stays open as evidence. An object Flux prunes because Git
// dropped it is not drift.
func TestDeletedObjectIsRecordedAndFluxRecreatesIt(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	files := map[string]string{
		"kustomization.yaml": fixture.Kustomization("settings.yaml", "legacy.yaml"),
		"settings.yaml":      settingsYAML,
		"legacy.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: legacy\ndata:\n  OLD: \"1\"\n",
	}
	f := fixture.NewApp(t, env, "deleted", fixture.AppOptions{Files: files})
	ks := f.Kustomization()
	before := f.Get(g, "settings", &corev1.ConfigMap{})

	_, err := env.KubectlAs(ctx, alice.User, "-n", f.Name, "delete", "configmap/settings")
	g.Expect(err).NotTo(HaveOccurred())

	rec := f.WaitRecord(g, "ConfigMap", "settings", func(d *refluxv1.Drift) error {
		fl, err := fixture.Field(d, refluxv1.WholeObjectPointer)
		if err != nil {
			return err
		}
		if fl.Modifier == nil || fl.Modifier.User == "" {
			return fmt.Errorf("record %s has no deleting user yet", d.Name)
		}
		// The status follows the spec in a second write.
		return fixture.InState(refluxv1.DriftDetected)(d) // nothing is left to hold
	})
	g.Expect(rec.Spec.Fields).To(HaveLen(1))
	fl := rec.Spec.Fields[0]
	g.Expect(fl.ChangeType).To(Equal(refluxv1.ChangeRemove))
	g.Expect(fl.Action).To(Equal(refluxv1.AlertAction))
	g.Expect(fl.Severity).To(Equal(refluxv1.SeverityHigh))
	g.Expect(fl.Rule).To(Equal("default:object-deleted"))
	g.Expect(fl.Modifier.User).To(Equal(aliceName))
	g.Expect(fl.Modifier.Operation).To(Equal("Delete"))
	g.Expect(fl.Origin).NotTo(BeNil())
	g.Expect(fl.Origin.File).To(Equal("settings.yaml"))
	g.Expect(fl.Origin.Line).To(BeEquivalentTo(5), "the document's name line")
	g.Expect(rec.Spec.Object.UID).To(Equal(string(before.GetUID())))
	g.Expect(rec.Status.HeldSince).To(BeNil())
	g.Expect(rec.Status.Severity).To(Equal(refluxv1.SeverityHigh))
	// Nothing a branch could carry: Detected, with ReverseSynced saying
	// why, and on no branch (issue 17 §4).
	g.Eventually(func() string {
		d := f.WaitRecord(g, "ConfigMap", "settings", fixture.InState(refluxv1.DriftDetected))
		for _, c := range d.Status.Conditions {
			if c.Type == refluxv1.ReverseSyncedCondition {
				return string(c.Status) + "/" + c.Reason + ": " + c.Message
			}
		}
		return ""
	}, fixture.Timeout, fixture.Interval).Should(And(HavePrefix("False/"+refluxv1.RefusedReason), ContainSubstring("deleted live")))
	f.Consistent(t, g)

	ev := f.Event(g, "DriftDetected", "settings was deleted live")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
	g.Eventually(func() string { return f.Condition(g, ks.Name, refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/"))

	// Flux recreates it; the record stays open as the evidence.
	f.Reconcile(g, ks.Name)
	again := f.Get(g, "settings", &corev1.ConfigMap{}).(*corev1.ConfigMap)
	g.Expect(again.GetUID()).NotTo(Equal(before.GetUID()))
	g.Expect(again.Data).To(HaveKeyWithValue("MODE", "live"))
	g.Expect(fixture.Held(again)).To(BeFalse())
	g.Consistently(func() refluxv1.DriftState {
		recs := f.Records(g, "ConfigMap", "settings")
		if len(recs) != 1 {
			return "missing"
		}
		return recs[0].Status.State
	}, 3*time.Second, 300*time.Millisecond).Should(Equal(refluxv1.DriftDetected))

	// Git drops legacy.yaml: Flux prunes the ConfigMap, which is no drift.
	delete(files, "legacy.yaml")
	files["kustomization.yaml"] = fixture.Kustomization("settings.yaml")
	_, err = env.Git.PushDir(ctx, f.Repo, fixture.Tree(t, "", files))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Reconcile(ctx, f.Source)).To(Succeed())
	f.Reconcile(g, ks.Name)
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.Name, Name: "legacy"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}, fixture.Timeout, fixture.Interval).Should(BeTrue(), "Flux pruned legacy")
	g.Consistently(func() int { return len(f.Records(g, "ConfigMap", "legacy")) },
		5*time.Second, 300*time.Millisecond).Should(BeZero(), "a prune is not drift")
}
