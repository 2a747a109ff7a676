package helmlive

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestAChartFromAHelmRepositoryIsTraced (issue 19's chart from the
// loopback HelmRepository): the same chart, packaged and served by a
// Helm repository on loopback, which a HelmRepository in Git names. Git
// holds no chart at all. alice's scale is held and recorded with the
// replicaCount line of the HelmRelease and the template's line, as for a
// chart from Git: reflux reads the chart helm-controller released, not
// its source.
func TestAChartFromAHelmRepositoryIsTraced(t *testing.T) {
	g := NewWithT(t)
	charts, err := testenv.StartChartRepository(filepath.Join(chartDir, "charts", "app"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = charts.Close() })

	const name = "from-repository"
	tree := map[string]string{
		"release/kustomization.yaml": "resources:\n  - repository.yaml\n  - release.yaml\n",
		"release/repository.yaml":    fixture.HelmRepositoryFile("charts", charts.URL),
		"release/release.yaml":       fixture.HelmRepositoryReleaseFile("charts", "", "  values:\n    replicaCount: 2 # two\n"),
	}
	app := newAppWith(t, name, fixture.AppOptions{Files: tree, Paths: map[string]string{name: "./release"}})
	// The HelmChart helm-controller used is the repository's.
	chartNS, chartName, _ := strings.Cut(helmRelease(g, app).Status.HelmChart, "/")
	hc := &sourcev1.HelmChart{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: chartNS, Name: chartName}, hc)).To(Succeed())
	g.Expect(hc.Spec.SourceRef.Kind).To(Equal(sourcev1.HelmRepositoryKind))
	g.Expect(hc.Status.Artifact).NotTo(BeNil())
	g.Expect(hc.Status.Artifact.Revision).To(Equal("0.1.0"), "the packaged chart's version")
	g.Expect(replicas(g, app)).To(Equal(int32(2)))

	scale(g, app, 5)
	_, f := tracedField(g, app, "/spec/replicas", "")
	g.Expect(f.GitValue + " -> " + f.LiveValue).To(Equal("2 -> 5"))
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/release.yaml", Line: 21, Column: 19, Kind: "values",
		ValuesKeys: []string{"replicaCount"}, Template: "templates/deployment.yaml:8"}))
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "held")
	reconciled(g, app)
	g.Expect(replicas(g, app)).To(Equal(int32(5)), "helm-controller's drift correction leaves the held edit alone")
}
