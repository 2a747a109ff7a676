package helmlive

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
		Rules: []refluxv1.Rule{{Name: "scale", Kinds: []string{"Deployment"}, Fields: []string{"/spec/replicas"}, Action: refluxv1.MergeAction,
			// The values line is prod/values.yaml; the HelmRelease is
			// release/release.yaml, which the rule names (issue 19 §7).
			Paths: []string{"release/*.yaml"}}}})
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
	// The HelmRelease says where its change went, beside helm-controller's
	// conditions.
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseSyncedCondition) }, fixture.Timeout, fixture.Interval).
		Should(Equal("True/" + refluxv1.BranchPushedReason + ": BranchPushed: branch " + rec.Status.Branch +
			" carries the change at " + rec.Status.Commit[:12]))

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
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseSyncedCondition) }, fixture.Timeout, fixture.Interval).
		Should(Equal("none"), "nothing of the release is left to write back")
	app.Consistent(t, g)
	app.Event(g, "DriftResolved", "Deployment "+name+"/app")
}

// TestARollbackAndAMemoryRaiseAlertAtTheirValuesLines (issue 19's image
// and memory tests): alice rolls the chart's image back to another tag
// and raises its memory limit four times. The policy's defaults make
// the image a high Alert and the memory a critical one; each field's
// origin is its values line, the tag's for the image the chart builds
// from repository and tag, and the prefilled branch that needs a
// decision changes exactly those two lines.
func TestARollbackAndAMemoryRaiseAlertAtTheirValuesLines(t *testing.T) {
	g := NewWithT(t)
	app := newApp(t, "rolled-back", "", "  values:\n    image:\n      tag: \"1.0.0\"\n    resources:\n      limits:\n"+
		"        memory: 32Mi\n")
	deploy := &appsv1.Deployment{}
	deploy.Namespace, deploy.Name = app.Name, "app"
	fixture.KubectlEdit(g, alice.Client, deploy, func() {
		c := &deploy.Spec.Template.Spec.Containers[0]
		c.Image = "registry.invalid/reflux/app:0.9.0"
		c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
	})

	rec := app.WaitRecord(g, "Deployment", "app", fixture.All(fixture.Pushed, func(d *refluxv1.Drift) error {
		if len(d.Spec.Fields) != 2 {
			return fmt.Errorf("fields %v, want the image and the memory", d.Spec.Fields)
		}
		return nil
	}))
	g.Expect(rec.Status.Branch).To(ContainSubstring("needs-decision"))
	image, err := fixture.Field(rec, "/spec/template/spec/containers/0/image")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]any{image.Action, image.Severity, image.Rule}).To(Equal([]any{refluxv1.AlertAction, refluxv1.SeverityHigh, "default:image"}))
	g.Expect(*image.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/release.yaml", Line: 22, Column: 12, Kind: "computed",
		ValuesKeys: []string{"image.tag"}, Template: "templates/deployment.yaml:19",
		Why: "the chart builds the value from image.repository+image.tag; only image.tag differs live"}))
	memory, err := fixture.Field(rec, "/spec/template/spec/containers/0/resources/limits/memory")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]any{memory.Action, memory.Severity, memory.Rule}).To(Equal([]any{refluxv1.AlertAction, refluxv1.SeverityCritical, "default:resources"}))
	g.Expect(*memory.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/release.yaml", Line: 25, Column: 17, Kind: "values",
		ValuesKeys: []string{"resources.limits.memory"}, Template: "templates/deployment.yaml:21"}))
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue())

	dir := fixture.CloneBranch(t, env, app.Repo, rec.Status.Branch)
	g.Expect(fixture.Git(t, dir, "diff", "--name-only", "origin/main", "HEAD")).To(Equal("release/release.yaml"))
	_, added, removed := fixture.DiffLines(fixture.Git(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(removed).To(Equal([]string{`      tag: "1.0.0"`, "        memory: 32Mi"}))
	g.Expect(added).To(Equal([]string{`      tag: "0.9.0"`, "        memory: 128Mi"}))
	app.Consistent(t, g)
}
