package helmlive

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/reverse/record"
)

// TestAMissingChartArtifactLosesNothing (issue 19's bad input): the chart
// leaves Git, so source-controller can make no artifact of it and
// helm-controller, which says so in its Ready condition, cannot upgrade.
// reflux compares with the release helm-controller made, whose chart
// Helm's storage keeps: alice's scale is held, recorded with its values
// line, and the HelmRelease's ReverseDrifted names the missing artifact
// (ArtifactUnavailable) beside helm-controller's failure.
func TestAMissingChartArtifactLosesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "no-chart"
	app := newApp(t, name, "", "  values:\n    replicaCount: 2 # two\n")

	dir := fixture.CloneBranch(t, env, app.Repo, "main")
	fixture.Git(t, dir, "rm", "-r", "-q", "charts")
	fixture.Git(t, dir, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", "move the chart out")
	fixture.Git(t, dir, "push", "-q", "origin", "main")
	g.Expect(env.Reconcile(ctx, app.Source)).To(Succeed())
	// source-controller builds the HelmChart from the new revision and
	// fails; helm-controller, asked to reconcile, finds no chart to use.
	chartNS, chartName, _ := strings.Cut(helmRelease(g, app).Status.HelmChart, "/")
	hc := &sourcev1.HelmChart{}
	hc.Namespace, hc.Name = chartNS, chartName
	g.Expect(env.Reconcile(ctx, hc)).To(Succeed())
	g.Expect(conditions.IsReady(hc)).To(BeFalse(), "the chart is gone from the revision")
	g.Expect(env.Reconcile(ctx, helmRelease(g, app))).To(Succeed())
	g.Eventually(func(g Gomega) {
		hr := helmRelease(g, app)
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
		g.Expect(conditions.IsFalse(hr, meta.ReadyCondition)).To(BeTrue(), "helm-controller says the chart is not there")
		g.Expect(hr.Status.History.Latest().Version).To(Equal(1), "and upgrades nothing")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	t.Logf("helm-controller: %s", releaseSays(g, app, meta.ReadyCondition))

	scale(g, app, 6)
	// The values line comes once the mapper has read the chart, off the
	// live path.
	_, f := tracedField(g, app, "/spec/replicas", "")
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/release.yaml", Line: 21, Column: 19, Kind: "values",
		ValuesKeys: []string{"replicaCount"}, Template: "templates/deployment.yaml:8"}))
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "held")
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseDriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(And(HavePrefix("True/"+refluxv1.ArtifactUnavailableReason+":"),
			ContainSubstring("helm-controller has no chart artifact to upgrade from"), ContainSubstring(chartName),
			ContainSubstring("compared with release "), ContainSubstring("the hold stays and the changes are kept")))
	t.Logf("reflux: %s", releaseSays(g, app, refluxv1.ReverseDriftedCondition))
	keptAndHeld(g, app, "/spec/replicas", "")
}

// TestAChartThatDoesNotRenderHereKeepsTheChange (issue 19's bad input: a
// chart that fails to render): the chart's template looks the release's
// namespace up in the cluster, which helm-controller can do and an
// offline render cannot. alice's scale is held and recorded all the same;
// its field is refused as chart-render-failed, and the HelmRelease's
// ReverseDrifted names the chart's failure (ChartRenderFailed) as what
// to fix.
func TestAChartThatDoesNotRenderHereKeepsTheChange(t *testing.T) {
	g := NewWithT(t)
	app := newAppWith(t, "lookup", fixture.AppOptions{Dir: "testdata/lookup", Files: files("lookup", "", ""),
		Paths: map[string]string{"lookup": "./release"}})

	scale(g, app, 3)
	_, f := tracedField(g, app, "/spec/replicas", "chart-render-failed")
	g.Expect(f.GitValue + " -> " + f.LiveValue).To(Equal("1 -> 3"))
	g.Expect(f.Origin.Refused).To(Equal("chart-render-failed"))
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "held")
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseDriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(And(HavePrefix("True/"+refluxv1.ChartRenderFailedReason+":"), ContainSubstring("the release's namespace must be looked up")))
	reconciled(g, app)
	g.Expect(replicas(g, app)).To(Equal(int32(3)), "helm-controller's drift correction leaves the held edit alone")
	keptAndHeld(g, app, "/spec/replicas", "chart-render-failed")
}

// TestValuesThatDoNotParseKeepTheChange (issue 19's bad input: values
// that do not parse): after the install, a commit breaks the values file
// that spec.valuesFrom takes. helm-controller refuses to upgrade and
// says so; reflux compares with the release it made. alice's scale is
// held and recorded, and the key the broken file may set is refused,
// naming the file, on the record and on the HelmRelease; its
// ReverseDrifted names the values helm-controller cannot use
// (ValuesInvalid).
func TestValuesThatDoNotParseKeepTheChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "bad-values"
	app := newAppWith(t, name, fixture.AppOptions{Dir: chartDir, Files: valuesFromFiles(name, "replicaCount: 2\n"),
		Paths: map[string]string{name: "./release"}})
	g.Expect(replicas(g, app)).To(Equal(int32(2)), "helm-controller installed the values file's replicas")

	dir := fixture.CloneBranch(t, env, app.Repo, "main")
	g.Expect(os.WriteFile(filepath.Join(dir, "release", "values.yaml"), []byte("replicaCount: [2\n"), 0o644)).To(Succeed())
	fixture.Git(t, dir, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "-am", "break the values")
	fixture.Git(t, dir, "push", "-q", "origin", "main")
	g.Expect(env.Reconcile(ctx, app.Source)).To(Succeed())
	app.Reconcile(g, name)
	g.Eventually(func(g Gomega) {
		cm := app.Get(g, "app-values", &corev1.ConfigMap{}).(*corev1.ConfigMap)
		g.Expect(cm.Data["values.yaml"]).To(Equal("replicaCount: [2\n"), "Flux applied the broken file")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	g.Expect(env.Reconcile(ctx, helmRelease(g, app))).To(Succeed())
	g.Eventually(func(g Gomega) {
		hr := helmRelease(g, app)
		g.Expect(conditions.IsFalse(hr, meta.ReadyCondition)).To(BeTrue(), "helm-controller refuses the values")
		g.Expect(hr.Status.History.Latest().Version).To(Equal(1), "and upgrades nothing")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	t.Logf("helm-controller: %s", releaseSays(g, app, meta.ReadyCondition))

	scale(g, app, 4)
	const why = "parsing values file release/values.yaml"
	_, f := tracedField(g, app, "/spec/replicas", "values-from")
	g.Expect(f.GitValue + " -> " + f.LiveValue).To(Equal("2 -> 4"))
	g.Expect(f.Origin.Refused).To(Equal("values-from"))
	g.Expect(f.Origin.Why).To(ContainSubstring(why))
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "held")
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseSyncedCondition) }, fixture.Timeout, fixture.Interval).
		Should(And(HavePrefix("False/"+refluxv1.RefusedReason+":"), ContainSubstring(why)))
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseDriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(And(HavePrefix("True/"+refluxv1.ValuesInvalidReason+":"),
			ContainSubstring("helm-controller cannot compose the values"), ContainSubstring("app-values"),
			ContainSubstring("the hold stays and the changes are kept")))
	t.Logf("reflux: %s", releaseSays(g, app, refluxv1.ReverseDriftedCondition))
	keptAndHeld(g, app, "/spec/replicas", "values-from")
}

// keptAndHeld checks, once the HelmRelease names the bad input, that
// nothing was lost meanwhile: the record of the Deployment's field is
// still open, with its origin as it was, and the Deployment still held.
func keptAndHeld(g Gomega, app *fixture.App, pointer, refused string) {
	rec, _ := tracedField(g, app, pointer, refused)
	g.Expect(record.IsOpen(rec)).To(BeTrue(), "the record stays open: %s", rec.Status.State)
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "the hold stays")
}
