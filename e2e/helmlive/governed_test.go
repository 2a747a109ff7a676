package helmlive

import (
	"context"
	"fmt"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// release is a HelmRelease of e2e/helmflux's chart, from the app's own
// GitRepository, with drift correction enabled.
func release(source, annotations, values string) string {
	return fixture.HelmReleaseFile(source, annotations, values)
}

// chartDir holds the chart the releases install, charts/app.
const chartDir = fixture.ChartTree

// files is the app's tree beside the chart: a Kustomization whose one
// resource is the HelmRelease.
func files(name, annotations, values string) map[string]string {
	return map[string]string{
		"release/kustomization.yaml": "resources:\n  - release.yaml\n",
		"release/release.yaml":       release(name, annotations, values),
	}
}

// newApp pushes the chart and a tree whose one resource is the
// HelmRelease, lets Flux apply it, reflux govern it, and helm-controller
// install release version 1.
func newApp(t *testing.T, name, annotations, values string) *fixture.App {
	t.Helper()
	return newAppWith(t, name, fixture.AppOptions{Dir: chartDir, Files: files(name, annotations, values),
		Paths: map[string]string{name: "./release"}})
}

// newAppWith is newApp with the app's tree, Kustomization and policy as
// o shapes them.
func newAppWith(t *testing.T, name string, o fixture.AppOptions) *fixture.App {
	t.Helper()
	app := fixture.NewApp(t, env, name, o)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		hr := helmRelease(g, app)
		g.Expect(hr.Status.History.Latest()).NotTo(BeNil())
		g.Expect(hr.Status.History.Latest().Version).To(Equal(1))
		g.Expect(conditions.IsReady(hr)).To(BeTrue())
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	return app
}

// valuesFromFiles is files' tree with the HelmRelease taking its values
// from a ConfigMap that a configMapGenerator makes of release/values.yaml,
// which holds values.
func valuesFromFiles(name, values string) map[string]string {
	tree := files(name, "", "  valuesFrom:\n    - kind: ConfigMap\n      name: app-values\n")
	tree["release/kustomization.yaml"] = "resources:\n  - release.yaml\ngeneratorOptions:\n  disableNameSuffixHash: true\n" +
		"configMapGenerator:\n  - name: app-values\n    files:\n      - values.yaml\n"
	tree["release/values.yaml"] = values
	return tree
}

// tracedField waits until the record of the app's Deployment has the
// origin the test expects for the field at pointer: a line in Git when
// refused is "", else that refusal. The mapper fills it in off the live
// path, after the record is written, and a refusal such as not-indexed
// may come first. It returns the record and the field.
func tracedField(g Gomega, app *fixture.App, pointer, refused string) (*refluxv1.Drift, refluxv1.DriftField) {
	rec := app.WaitRecord(g, "Deployment", "app", func(d *refluxv1.Drift) error {
		f, err := fixture.Field(d, pointer)
		switch {
		case err != nil || f.Origin == nil:
			return fmt.Errorf("no origin of %s yet: %v", pointer, d.Spec.Fields)
		case refused == "" && f.Origin.File == "":
			return fmt.Errorf("no line in Git for %s yet: %+v", pointer, *f.Origin)
		case f.Origin.Refused != refused:
			return fmt.Errorf("%s is not refused as %s yet: %+v", pointer, refused, *f.Origin)
		}
		return nil
	})
	f, err := fixture.Field(rec, pointer)
	g.Expect(err).NotTo(HaveOccurred())
	return rec, f
}

func helmRelease(g Gomega, app *fixture.App) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: app.Name, Name: "app"}, hr)).To(Succeed())
	return hr
}

// releaseSays is the app's HelmRelease's condition of type t, as
// fixture.Describe puts it ("none" when it has none): what the tests wait
// on when they wait for reflux's word on the release.
func releaseSays(g Gomega, app *fixture.App, t string) string {
	return fixture.Describe(conditions.Get(helmRelease(g, app), t))
}

// heldForHelm reports whether reflux holds obj with helm-controller's
// key: driftDetection disabled beside reflux's held-by annotation.
func heldForHelm(obj client.Object) bool {
	a := obj.GetAnnotations()
	return a[refluxv1.HelmDriftDetectionAnnotation] == refluxv1.HelmDriftDetectionDisabled && a[refluxv1.HeldByAnnotation] != ""
}

// reconciled makes helm-controller reconcile the HelmRelease and waits
// until it is Ready again: the reconcile that corrects drift ends with
// Ready Unknown, and its retry sets Ready (e2e/helmflux).
func reconciled(g Gomega, app *fixture.App) {
	g.Expect(env.Reconcile(context.Background(), helmRelease(g, app))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsTrue(helmRelease(g, app), meta.ReadyCondition)).To(BeTrue())
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
}

// scale is alice's `kubectl scale` of the chart's Deployment.
func scale(g Gomega, app *fixture.App, n int32) {
	deploy := &appsv1.Deployment{}
	deploy.Namespace, deploy.Name = app.Name, "app"
	fixture.KubectlEdit(g, alice.Client, deploy, func() { deploy.Spec.Replicas = ptr.To(n) })
}

func replicas(g Gomega, app *fixture.App) int32 {
	return *app.Get(g, "app", &appsv1.Deployment{}).(*appsv1.Deployment).Spec.Replicas
}

// TestAnEditOfAChartsObjectIsHeldAndRecorded: alice scales the chart's
// Deployment by hand. reflux holds it with helm.toolkit.fluxcd.io/
// driftDetection: disabled and records it, naming the HelmRelease and the
// release; helm-controller's forced reconcile leaves the edit alone.
// Dismissing the record releases the hold, and helm-controller, asked to
// reconcile by reflux, puts the chart's replicas back.
func TestAnEditOfAChartsObjectIsHeldAndRecorded(t *testing.T) {
	g := NewWithT(t)
	app := newApp(t, "governed", "", "  values:\n    replicaCount: 2\n")
	scale(g, app, 5)

	rec := app.WaitRecord(g, "Deployment", "app", fixture.All(fixture.HasField("/spec/replicas"), fixture.InState(refluxv1.DriftHeld)))
	g.Expect(rec.Spec.HelmRelease).To(Equal(&refluxv1.HelmReleaseRef{Namespace: app.Name, Name: "app", Release: app.Name + "/app.v1"}))
	g.Expect(rec.Spec.Kustomization.Name).To(Equal(app.Name), "the Kustomization that applies the HelmRelease")
	g.Expect(rec.Spec.Policy).To(Equal(app.Policy.Name))
	f, err := fixture.Field(rec, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.ChangeType).To(Equal(refluxv1.ChangeUpdate))
	g.Expect([]string{f.GitValue, f.LiveValue}).To(Equal([]string{"2", "5"}), "the chart's value and the live one")
	g.Expect(f.FluxReverts).To(BeTrue(), "drift correction is enabled")
	g.Expect(f.Modifier).NotTo(BeNil())
	g.Expect(f.Modifier.Manager).To(Equal("kubectl-edit"))
	g.Expect(rec.Spec.Fields).To(HaveLen(1), "only the edited field drifted")

	// The values key is found off the live path, by rendering the chart,
	// and the record filled in after: the replicaCount line of the
	// HelmRelease's spec.values.
	_, traced := tracedField(g, app, "/spec/replicas", "")
	f = traced
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/release.yaml", Line: 21, Column: 19, Kind: "values",
		ValuesKeys: []string{"replicaCount"}, Template: "templates/deployment.yaml:8"}))
	// replicas are Alert by default: with the values line known, a
	// prefilled branch changes it, for a human to decide.
	rec = app.WaitRecord(g, "Deployment", "app", fixture.Pushed)
	g.Expect(rec.Status.Branch).To(ContainSubstring("needs-decision"))
	out, err := yaml.Marshal(map[string]any{"spec": map[string]any{"kustomization": rec.Spec.Kustomization,
		"helmRelease": rec.Spec.HelmRelease, "object": rec.Spec.Object, "fields": rec.Spec.Fields}, "status": map[string]any{"state": rec.Status.State}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("kubectl -n %s get drift %s -o yaml (in part):\n%s", app.Name, rec.Name, out) // the README shows it

	live := app.Get(g, "app", &appsv1.Deployment{})
	g.Expect(heldForHelm(live)).To(BeTrue(), "held with helm-controller's key: %v", live.GetAnnotations())
	g.Expect(live.GetAnnotations()).To(HaveKeyWithValue(refluxv1.HeldByAnnotation, rec.Name))
	g.Expect(live.GetAnnotations()).NotTo(HaveKey(refluxv1.ReconcileAnnotation), "kustomize-controller's key means nothing here")

	for range 2 {
		reconciled(g, app)
		g.Expect(replicas(g, app)).To(Equal(int32(5)), "helm-controller leaves the held edit alone")
	}
	// reflux's condition on the HelmRelease, beside helm-controller's
	// own: it outlives helm-controller's status writes.
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseDriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(Equal("True/" + refluxv1.DriftDetectedReason + ": 1 field(s) in 1 object(s) drifted: 1 low; 1 Alert"))
	g.Expect(conditions.IsReady(helmRelease(g, app))).To(BeTrue(), "helm-controller's conditions are its own")
	// The drift metrics count a chart's objects as any other, by the
	// Kustomization that applies the HelmRelease and the object's kind.
	g.Eventually(func(g Gomega) float64 {
		v, _ := fixture.Metric(g, rfx.Process, "reflux_drift_fields", map[string]string{"namespace": app.Name, "kustomization": app.Name,
			"kind": "Deployment", "severity": "low", "action": "Alert"})
		return v
	}, fixture.Timeout, fixture.Interval).Should(Equal(1.0))

	fixture.Dismiss(g, env.Client, rec)
	app.WaitRecord(g, "Deployment", "app", fixture.InState(refluxv1.DriftDismissed))
	g.Eventually(func(g Gomega) {
		d := app.Get(g, "app", &appsv1.Deployment{}).(*appsv1.Deployment)
		g.Expect(heldForHelm(d)).To(BeFalse(), "released")
		g.Expect(*d.Spec.Replicas).To(Equal(int32(2)), "helm-controller corrected the drift once released")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseDriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(Equal("False/" + refluxv1.NoDriftReason + ": no drift from release " + app.Name + "/app.v1"))
}

// TestAReleaseOptedOutIsNotGoverned: a HelmRelease annotated
// reflux.dev/reverse-sync: disabled is left to helm-controller, whose
// drift correction reverts the same edit with no record and no hold.
func TestAReleaseOptedOutIsNotGoverned(t *testing.T) {
	g := NewWithT(t)
	app := newApp(t, "opted-out", "  annotations:\n    reflux.dev/reverse-sync: disabled\n", "")
	scale(g, app, 5)
	reconciled(g, app)
	g.Eventually(replicas).WithArguments(app).WithTimeout(fixture.Timeout).WithPolling(fixture.Interval).Should(Equal(int32(2)),
		"helm-controller reverted the edit: nothing held it")
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeFalse())
	g.Expect(app.Records(g, "Deployment", "app")).To(BeEmpty())
	g.Expect(releaseSays(g, app, refluxv1.ReverseDriftedCondition)).To(Equal("none"), "reflux says nothing of it")
}

// TestAnUpgradeOverAHeldEditKeepsTheEvidence: an upgrade applies the
// chart over reflux's hold (docs/flux-behaviour.md) and takes alice's
// edit back. Nothing short of suspending the release stops that, so the
// record stays open with what alice changed, as evidence, and the hold
// that no longer holds anything is released.
func TestAnUpgradeOverAHeldEditKeepsTheEvidence(t *testing.T) {
	g := NewWithT(t)
	app := newApp(t, "upgraded", "", "")
	scale(g, app, 5)
	held := app.WaitRecord(g, "Deployment", "app", fixture.All(fixture.HasField("/spec/replicas"), fixture.InState(refluxv1.DriftHeld)))

	// A commit that changes only the ConfigMap's values: helm-controller
	// upgrades the release, Deployment included.
	ctx := context.Background()
	_, err := env.Git.PushDir(ctx, app.Repo, fixture.Tree(t, chartDir, files(app.Name, "",
		"  values:\n    config:\n      mode: maintenance\n")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Reconcile(ctx, app.Source)).To(Succeed())
	app.Reconcile(g, app.Name)
	g.Eventually(func(g Gomega) {
		hr := helmRelease(g, app)
		g.Expect(hr.Status.History.Latest()).NotTo(BeNil())
		g.Expect(hr.Status.History.Latest().Version).To(Equal(2))
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	g.Eventually(replicas).WithArguments(app).WithTimeout(fixture.Timeout).WithPolling(fixture.Interval).Should(Equal(int32(2)),
		"the upgrade applied the chart over the hold")

	rec := app.WaitRecord(g, "Deployment", "app", fixture.InState(refluxv1.DriftDetected))
	g.Expect(rec.Name).To(Equal(held.Name))
	g.Expect(rec.Status.Closed).To(BeNil(), "kept open as evidence")
	f, err := fixture.Field(rec, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.LiveValue).To(Equal("5"), "what alice changed")
	g.Eventually(func(g Gomega) {
		g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeFalse(), "the hold is released")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())

	// Not silently: the record says so, and a Warning event an Alert
	// routes names the release applied over the hold.
	lost := fmt.Sprintf("helm-controller's upgrade of HelmRelease %s/app applied the chart over the hold: "+
		"the change is lost live and kept as evidence", app.Name)
	rec = app.WaitRecord(g, "Deployment", "app", fixture.InState(refluxv1.DriftDetected))
	g.Expect(fixture.Describe(apimeta.FindStatusCondition(rec.Status.Conditions, refluxv1.LostLiveCondition))).
		To(Equal("True/" + refluxv1.OverwrittenByUpgradeReason + ": " + lost))
	e := app.Event(g, refluxv1.LiveChangeLostEventReason, lost)
	g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(e.Message).To(Equal(fmt.Sprintf("Deployment %s/app: %s: /spec/replicas (low Alert, Update)", app.Name, lost)))
}
