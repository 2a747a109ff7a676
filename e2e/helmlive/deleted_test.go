package helmlive

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// deletedRecord waits for the record of the deletion of the app's
// ConfigMap name, with the chart's template that renders it.
func deletedRecord(g Gomega, app *fixture.App, name string) (*refluxv1.Drift, refluxv1.DriftField) {
	rec := app.WaitRecord(g, "ConfigMap", name, func(d *refluxv1.Drift) error {
		f, err := fixture.Field(d, refluxv1.WholeObjectPointer)
		switch {
		case err != nil:
			return err
		case f.Origin == nil || f.Origin.Template == "":
			return fmt.Errorf("no template line for the deletion of %s yet: %+v", name, f.Origin)
		}
		// The status follows the spec in a second write; nothing is left
		// to hold.
		return fixture.InState(refluxv1.DriftDetected)(d)
	})
	f, err := fixture.Field(rec, refluxv1.WholeObjectPointer)
	g.Expect(err).NotTo(HaveOccurred())
	return rec, f
}

// TestADeletedObjectOfAChartIsRecorded (issue 19 §7: deletes work as for
// Kustomizations): alice's `kubectl delete` of a ConfigMap the chart
// renders is drift of the whole object. The record names the release,
// the HelmRelease's line in Git and the chart's template, and there is no
// hold. helm-controller's drift correction creates the object again, and
// the record stays open as evidence. An upgrade that stops rendering an
// object deletes it too; that deletion is Helm's, and not drift.
func TestADeletedObjectOfAChartIsRecorded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const dir = "testdata/optional"
	app := newAppWith(t, "deleted", fixture.AppOptions{Dir: dir, Files: files("deleted", "", ""),
		Paths: map[string]string{"deleted": "./release"}})
	before := app.Get(g, "app-settings", &corev1.ConfigMap{})

	_, err := env.KubectlAs(ctx, alice.User, "-n", app.Name, "delete", "configmap/app-settings")
	g.Expect(err).NotTo(HaveOccurred())
	rec, f := deletedRecord(g, app, "app-settings")
	g.Expect(rec.Spec.Fields).To(HaveLen(1))
	g.Expect(rec.Spec.HelmRelease).To(Equal(&refluxv1.HelmReleaseRef{Namespace: app.Name, Name: "app", Release: app.Name + "/app.v1"}))
	g.Expect(rec.Spec.Object.UID).To(Equal(string(before.GetUID())))
	g.Expect(f.ChangeType).To(Equal(refluxv1.ChangeRemove))
	g.Expect(f.Modifier).NotTo(BeNil())
	g.Expect(f.Modifier.Operation).To(Equal(refluxv1.DeleteOperation))
	g.Expect([]any{f.Action, f.Severity, f.Rule}).To(Equal([]any{refluxv1.AlertAction, refluxv1.SeverityHigh, "default:object-deleted"}))
	g.Expect(f.Origin.File+":"+fmt.Sprint(f.Origin.Line)).To(Equal("release/release.yaml:4"), "the HelmRelease's name line")
	g.Expect(f.Origin.Template).To(Equal("templates/configmap.yaml:4"), "the template's name line")
	g.Expect(rec.Status.HeldSince).To(BeNil())

	// helm-controller's drift correction creates it again; the record
	// stays open, as evidence.
	reconciled(g, app)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: app.Name, Name: "app-settings"}, &corev1.ConfigMap{})).To(Succeed())
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	rec = app.WaitRecord(g, "ConfigMap", "app-settings", fixture.InState(refluxv1.DriftDetected))
	g.Expect(rec.Status.Closed).To(BeNil(), "kept open as evidence")

	// A commit turns extra.enabled off: helm-controller's upgrade deletes
	// app-extra, which is Helm's deletion.
	_, err = env.Git.PushDir(ctx, app.Repo, fixture.Tree(t, dir, files(app.Name, "", "  values:\n    extra:\n      enabled: false\n")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Reconcile(ctx, app.Source)).To(Succeed())
	app.Reconcile(g, app.Name)
	g.Eventually(func(g Gomega) {
		g.Expect(helmRelease(g, app).Status.History.Latest().Version).To(Equal(2))
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: app.Name, Name: "app-extra"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the upgrade deleted app-extra: %v", err)
	}, fixture.Timeout, fixture.Interval).Should(Succeed())

	// A deletion by alice after it is recorded against the new release;
	// by then the upgrade's deletion has long been decided, and it left
	// no record.
	_, err = env.KubectlAs(ctx, alice.User, "-n", app.Name, "delete", "configmap/app-flags")
	g.Expect(err).NotTo(HaveOccurred())
	rec, f = deletedRecord(g, app, "app-flags")
	g.Expect(rec.Spec.HelmRelease.Release).To(Equal(app.Name + "/app.v2"))
	g.Expect(f.Origin.Template).To(Equal("templates/flags.yaml:4"))
	g.Expect(app.Records(g, "ConfigMap", "app-extra")).To(BeEmpty(), "Helm's own deletion is not drift")
}
