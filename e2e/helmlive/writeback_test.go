package helmlive

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// prodValues is the prod overlay's patch on the HelmRelease's
// spec.values: the replicaCount line a scale of prod traces to.
const prodValues = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: app
spec:
  values:
    replicaCount: 3 # prod runs three
`

// TestAScaleBecomesAValuesChangeAndResolvesOnMerge (issue 19 §6): alice
// scales the chart's Deployment by hand and the policy merges replicas.
// reflux holds the edit, traces it to the replicaCount line of the prod
// overlay's patch on spec.values, verifies the change by rendering the
// chart, and pushes a signed branch that changes exactly that line. A
// reviewer merges it; Flux applies the HelmRelease, helm-controller
// upgrades the release with the new values, and the record is Resolved
// with the live value kept.
func TestAScaleBecomesAValuesChangeAndResolvesOnMerge(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := "scaled"
	tree := files(name, "", "  values:\n    replicaCount: 2\n")
	tree["prod/kustomization.yaml"] = "resources:\n  - ../release\npatches:\n  - path: values.yaml\n"
	tree["prod/values.yaml"] = prodValues
	app := newAppWith(t, name, fixture.AppOptions{Dir: chartDir, Files: tree, Paths: map[string]string{name: "./prod"}, Signed: true,
		Rules: []refluxv1.Rule{{Name: "scale", Kinds: []string{"Deployment"}, Fields: []string{"/spec/replicas"}, Action: refluxv1.MergeAction}}})
	g.Expect(replicas(g, app)).To(Equal(int32(3)), "prod's overlay sets three")

	scale(g, app, 5)
	rec := app.WaitRecord(g, "Deployment", "app", fixture.Pushed)
	f, err := fixture.Field(rec, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Action).To(Equal(refluxv1.MergeAction))
	g.Expect(f.Rule).To(Equal("scale"))
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{File: "prod/values.yaml", Line: 7, Column: 19, Kind: "values",
		ValuesKeys: []string{"replicaCount"}, Template: "templates/deployment.yaml:8"}))
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "a proposed edit stays held")

	dir := fixture.CloneBranch(t, env, app.Repo, rec.Status.Branch)
	fixture.VerifySigned(t, dir, app.Key.Public)
	g.Expect(fixture.Git(t, dir, "diff", "--name-only", "origin/main", "HEAD")).To(Equal("prod/values.yaml"))
	diff := fixture.Git(t, dir, "diff", "origin/main", "HEAD")
	t.Logf("git diff main %s:\n%s", rec.Status.Branch, diff) // the README shows it
	hunks, added, removed := fixture.DiffLines(fixture.Git(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(hunks).To(HaveLen(1))
	g.Expect(removed).To(Equal([]string{"    replicaCount: 3 # prod runs three"}))
	g.Expect(added).To(Equal([]string{"    replicaCount: 5 # prod runs three"}), "the line, comment kept")
	g.Expect(fixture.Git(t, dir, "log", "-1", "--format=%B")).To(ContainSubstring("Reflux-Drift: " + rec.Namespace + "/" + rec.Name))
	app.Consistent(t, g)

	fixture.Merge(t, dir, rec.Status.Branch)
	g.Expect(env.Reconcile(ctx, app.Source)).To(Succeed())
	app.Reconcile(g, name)
	g.Eventually(func(g Gomega) {
		hr := helmRelease(g, app)
		g.Expect(hr.Status.History.Latest()).NotTo(BeNil())
		g.Expect(hr.Status.History.Latest().Version).To(Equal(2), "helm-controller upgraded with the merged values")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	resolved := app.WaitRecord(g, "Deployment", "app", fixture.InState(refluxv1.DriftResolved))
	g.Expect(resolved.Name).To(Equal(rec.Name))
	g.Eventually(func(g Gomega) {
		d := app.Get(g, "app", &appsv1.Deployment{}).(*appsv1.Deployment)
		g.Expect(*d.Spec.Replicas).To(Equal(int32(5)), "the live value is now the chart's")
		g.Expect(heldForHelm(d)).To(BeFalse(), "released once resolved")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	g.Eventually(func() []string { return fixture.Branches(t, env, app.Repo) }, fixture.Timeout, fixture.Interval).
		Should(BeEmpty(), "reflux deletes its merged branch")
	app.Consistent(t, g)
	app.Event(g, "DriftResolved", "Deployment "+name+"/app")
}
