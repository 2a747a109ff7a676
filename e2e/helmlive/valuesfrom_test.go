package helmlive

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestAValuesFromFileIsTheOrigin (issue 19 §5 and §6): the HelmRelease
// takes its resources from a values file that a configMapGenerator makes
// into the ConfigMap its spec.valuesFrom names. alice raises the memory
// request; the record's origin is the line of that file, not of the
// HelmRelease, and the branch that needs a decision changes that line,
// comment kept, and nothing else.
func TestAValuesFromFileIsTheOrigin(t *testing.T) {
	g := NewWithT(t)
	const name = "values-from"
	tree := valuesFromFiles(name, "# the team's sizing\nresources:\n  requests:\n    cpu: 10m\n    memory: 24Mi # measured\n")
	app := newAppWith(t, name, fixture.AppOptions{Dir: chartDir, Files: tree, Paths: map[string]string{name: "./release"}})
	deploy := &appsv1.Deployment{}
	deploy.Namespace, deploy.Name = app.Name, "app"
	g.Expect(app.Get(g, "app", deploy).(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Resources.Requests.Memory().String()).
		To(Equal("24Mi"), "helm-controller installed the values file's request")

	fixture.KubectlEdit(g, alice.Client, deploy, func() {
		deploy.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("40Mi")
	})
	const memory = "/spec/template/spec/containers/0/resources/requests/memory"
	// The values line comes once the mapper has read the chart, off the
	// live path, and the branch after it.
	rec := app.WaitRecord(g, "Deployment", "app", func(d *refluxv1.Drift) error {
		if f, err := fixture.Field(d, memory); err != nil || f.Origin == nil || f.Origin.File == "" {
			return fmt.Errorf("no values line yet: %v", d.Spec.Fields)
		}
		return fixture.Pushed(d)
	})
	f, err := fixture.Field(rec, memory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/values.yaml", Line: 5, Column: 13, Kind: "values-from",
		ValuesKeys: []string{"resources.requests.memory"}, Template: "templates/deployment.yaml:21"}))
	g.Eventually(func(g Gomega) string { return releaseSays(g, app, refluxv1.ReverseSyncedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/" + refluxv1.BranchPushedReason + ":"))

	dir := fixture.CloneBranch(t, env, app.Repo, rec.Status.Branch)
	g.Expect(fixture.Git(t, dir, "diff", "--name-only", "origin/main", "HEAD")).To(Equal("release/values.yaml"))
	hunks, added, removed := fixture.DiffLines(fixture.Git(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(hunks).To(HaveLen(1))
	g.Expect(removed).To(Equal([]string{"    memory: 24Mi # measured"}))
	g.Expect(added).To(Equal([]string{"    memory: 40Mi # measured"}), "the line, comment kept")
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "a proposed edit stays held")
}

// TestAChartDefaultNamesTheKeyToAdd (issue 19's chart-default test): the
// HelmRelease sets no values, so the cpu request comes from the chart's
// values.yaml. alice raises it; the record's origin is refused as
// chart-default, naming the key and where under spec.values to add it,
// and write-back, which adds keys only where the policy says so, says so.
func TestAChartDefaultNamesTheKeyToAdd(t *testing.T) {
	g := NewWithT(t)
	app := newApp(t, "defaulted", "", "")
	deploy := &appsv1.Deployment{}
	deploy.Namespace, deploy.Name = app.Name, "app"
	fixture.KubectlEdit(g, alice.Client, deploy, func() {
		deploy.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("20m")
	})
	const cpu = "/spec/template/spec/containers/0/resources/requests/cpu"
	rec := app.WaitRecord(g, "Deployment", "app", func(d *refluxv1.Drift) error {
		if f, err := fixture.Field(d, cpu); err != nil || f.Origin == nil || f.Origin.Refused != "chart-default" {
			return fmt.Errorf("no chart-default origin of %s yet: %v", cpu, d.Spec.Fields)
		}
		if c := apimeta.FindStatusCondition(d.Status.Conditions, refluxv1.ReverseSyncedCondition); c == nil ||
			!strings.Contains(c.Message, "origin refused: chart-default") {
			return fmt.Errorf("record %s's ReverseSynced is not write-back's word on the origin yet: %v", d.Name, c)
		}
		return nil
	})
	f, err := fixture.Field(rec, cpu)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{Kind: "chart-default", Refused: "chart-default",
		Why:    "the chart's values.yaml sets resources.requests.cpu; add it under spec.values",
		EditAt: "release/release.yaml:6", ValuesKeys: []string{"resources.requests.cpu"}, Template: "templates/deployment.yaml:21"}))
	c := apimeta.FindStatusCondition(rec.Status.Conditions, refluxv1.ReverseSyncedCondition)
	g.Expect(string(c.Status) + "/" + c.Reason).To(Equal("False/" + refluxv1.RefusedReason))
	g.Expect(c.Message).To(ContainSubstring("origin refused: chart-default"))
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "the change is held all the same")
}

// TestAChartDefaultIsAddedWhenThePolicySaysSo (issue 19 §6): with
// spec.git.addChartDefaults and a Merge rule, the same edit of a field
// only the chart's values.yaml sets becomes a signed branch that adds
// resources.requests.cpu under the HelmRelease's spec.values, with the
// maps above it, verified through the chart. Merged, helm-controller
// upgrades with the key, and the record is Resolved.
func TestAChartDefaultIsAddedWhenThePolicySaysSo(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name, cpu = "defaultadd", "/spec/template/spec/containers/0/resources/requests/cpu"
	app := newAppWith(t, name, fixture.AppOptions{Dir: chartDir, Files: files(name, "", ""), Paths: map[string]string{name: "./release"},
		Signed: true, Policy: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.AddChartDefaults = true },
		Rules: []refluxv1.Rule{{Name: "cpu", Kinds: []string{"Deployment"}, Fields: []string{"/spec/template/spec/containers/*/resources/requests/cpu"},
			Action: refluxv1.MergeAction}}})
	deploy := &appsv1.Deployment{}
	deploy.Namespace, deploy.Name = app.Name, "app"
	fixture.KubectlEdit(g, alice.Client, deploy, func() {
		deploy.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("20m")
	})
	rec := app.WaitRecord(g, "Deployment", "app", fixture.Pushed)
	f, err := fixture.Field(rec, cpu)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]any{f.Action, f.Origin.Refused, f.Origin.ValuesKeys}).To(Equal([]any{refluxv1.MergeAction, "chart-default", []string{"resources.requests.cpu"}}))

	dir := fixture.CloneBranch(t, env, app.Repo, rec.Status.Branch)
	fixture.VerifySigned(t, dir, app.Key.Public)
	g.Expect(fixture.Git(t, dir, "diff", "--name-only", "origin/main", "HEAD")).To(Equal("release/release.yaml"))
	hunks, added, removed := fixture.DiffLines(fixture.Git(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(hunks).To(HaveLen(1))
	g.Expect(removed).To(BeEmpty())
	g.Expect(added).To(Equal([]string{"  values:", "    resources:", "      requests:", "        cpu: 20m"}),
		"the key and the maps above it, at the end of spec")

	fixture.Merge(t, dir, rec.Status.Branch)
	g.Expect(env.Reconcile(ctx, app.Source)).To(Succeed())
	app.Reconcile(g, name)
	g.Eventually(func(g Gomega) {
		g.Expect(helmRelease(g, app).Status.History.Latest().Version).To(Equal(2), "helm-controller upgraded with the added key")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
	resolved := app.WaitRecord(g, "Deployment", "app", fixture.InState(refluxv1.DriftResolved))
	g.Expect(resolved.Name).To(Equal(rec.Name))
	g.Eventually(func(g Gomega) {
		d := app.Get(g, "app", &appsv1.Deployment{}).(*appsv1.Deployment)
		g.Expect(d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("20m"))
		g.Expect(heldForHelm(d)).To(BeFalse(), "released once resolved")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
}
