package helmlive

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestAMissingChartArtifactLosesNothing (issue 19's bad input): the chart
// leaves Git, so source-controller can make no artifact of it and
// helm-controller, which says so in its Ready condition, cannot upgrade.
// reflux compares with the release helm-controller made, whose chart
// Helm's storage keeps: alice's scale is held, recorded with its values
// line, and the HelmRelease's ReverseDrifted says so beside
// helm-controller's failure.
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
	t.Logf("helm-controller: %s", fixture.Describe(conditions.Get(helmRelease(g, app), meta.ReadyCondition)))

	scale(g, app, 6)
	// The values line comes once the mapper has read the chart, off the
	// live path.
	rec := app.WaitRecord(g, "Deployment", "app", func(d *refluxv1.Drift) error {
		if f, err := fixture.Field(d, "/spec/replicas"); err != nil || f.Origin == nil || f.Origin.File == "" {
			return fmt.Errorf("no values line yet: %v", d.Spec.Fields)
		}
		return nil
	})
	f, err := fixture.Field(rec, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/release.yaml", Line: 21, Column: 19, Kind: "values",
		ValuesKeys: []string{"replicaCount"}, Template: "templates/deployment.yaml:8"}))
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "held")
	g.Eventually(func(g Gomega) {
		c := conditions.Get(helmRelease(g, app), refluxv1.ReverseDriftedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(string(c.Status) + "/" + c.Reason).To(Equal("True/" + refluxv1.DriftDetectedReason))
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
}
