package cli

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// TestTraceChart traces fields a chart renders for a HelmRelease offline:
// testdata/helm-fleet's chart with the values of its HelmRelease file.
func TestTraceChart(t *testing.T) {
	const (
		chartDir   = "testdata/helm-fleet/charts/web"
		hrFile     = "testdata/helm-fleet/apps/web/release.yaml"
		valuesFile = "testdata/helm-fleet/apps/web/values.yaml"
	)
	t.Run("one field: its values key, the line that sets it, the template", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runTraceCmd("--chart", chartDir, "--helmrelease", hrFile+"#web", "Deployment/web/web", "/spec/replicas")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(columns(out)).To(Equal([][]string{
			{"FIELD", "VALUE", "VALUES KEY", "ORIGIN", "TEMPLATE"},
			{"/spec/replicas", "3", "replicaCount", hrFile + ":25:19", "templates/deployment.yaml:6"},
		}), out)
		g.Expect(out).To(HavePrefix("# apps/v1/Deployment/web/web, as the chart renders it\n"))
	})
	t.Run("a packaged chart traces as its folder does", func(t *testing.T) {
		g := NewWithT(t)
		ch, err := loader.Load(chartDir)
		g.Expect(err).NotTo(HaveOccurred())
		tgz, err := chartutil.Save(ch, t.TempDir())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tgz).To(HaveSuffix(".tgz"))
		out, err := runTraceCmd("--chart", tgz, "--helmrelease", hrFile+"#web", "Deployment/web/web", "/spec/replicas")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(columns(out)).To(Equal([][]string{
			{"FIELD", "VALUE", "VALUES KEY", "ORIGIN", "TEMPLATE"},
			{"/spec/replicas", "3", "replicaCount", hrFile + ":25:19", "templates/deployment.yaml:6"},
		}), out)
	})
	t.Run("a literal's line is where the YAML puts it, not the first line with its text", func(t *testing.T) {
		g := NewWithT(t)
		// "web" and "name:" are on line 4 too (metadata.name).
		out, err := runTraceCmd("--chart", chartDir, "--helmrelease", hrFile, "Deployment/web/web", "/spec/template/spec/containers/0/name")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(columns(out)).To(Equal([][]string{
			{"FIELD", "VALUE", "VALUES KEY", "ORIGIN", "TEMPLATE"},
			{"/spec/template/spec/containers/0/name", `"web"`, "template-literal", "-", "templates/deployment.yaml:16"},
		}), out)
	})
	t.Run("every field of an object, in JSON", func(t *testing.T) {
		g := NewWithT(t)
		// The file holds one HelmRelease: its name may be left out.
		out, err := runTraceCmd("--chart", chartDir, "--helmrelease", hrFile, "-o", "json", "ConfigMap/web-config")
		g.Expect(err).NotTo(HaveOccurred())
		var got struct {
			Object string       `json:"object"`
			Fields []chartField `json:"fields"`
		}
		g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed())
		g.Expect(got.Object).To(Equal("v1/ConfigMap/web/web-config"))
		g.Expect(got.Fields).To(ContainElements(
			chartField{Pointer: "/data/greeting", Value: `"welcome"`, traced: traced{Kind: "values", Keys: []string{"config.greeting"},
				Origin: hrFile + ":27:17", Template: "templates/configmap.yaml:6"}},
			// Only the chart's values.yaml sets it, through a named
			// template: where to add it.
			chartField{Pointer: "/data/logLevel", Value: `"info"`, traced: traced{Kind: "chart-default", Keys: []string{"config.logLevel"},
				Refused: "chart-default: the chart's values.yaml sets config.logLevel; add it under spec.values",
				EditAt:  hrFile + ":25", Template: "templates/_helpers.tpl:6"}},
			// Made of the release's name: no values key sets it.
			chartField{Pointer: "/metadata/name", Value: `"web-config"`, traced: traced{Kind: "template-literal", Template: "templates/configmap.yaml:4"}},
		))
	})
	t.Run("--values: a key the HelmRelease takes through spec.valuesFrom, at its line in that file", func(t *testing.T) {
		g := NewWithT(t)
		const memory = "/spec/template/spec/containers/0/resources/limits/memory"
		out, err := runTraceCmd("--chart", chartDir, "--helmrelease", hrFile, "--values", valuesFile, "Deployment/web/web", memory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(columns(out)[1]).To(Equal([]string{memory, `"512Mi"`, "resources.limits.memory", valuesFile + ":4:13", "templates/deployment.yaml:21"}), out)
		// spec.values wins over the file: replicaCount is still the
		// HelmRelease's.
		out, err = runTraceCmd("--chart", chartDir, "--helmrelease", hrFile, "--values", valuesFile, "Deployment/web/web", "/spec/replicas")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(columns(out)[1]).To(Equal([]string{"/spec/replicas", "3", "replicaCount", hrFile + ":25:19", "templates/deployment.yaml:6"}), out)
		// Without the file, the chart's default renders.
		out, err = runTraceCmd("--chart", chartDir, "--helmrelease", hrFile, "Deployment/web/web", memory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(columns(out)[1]).To(Equal([]string{memory, `"256Mi"`, "resources.limits.memory", "chart-default (add at " + hrFile + ":25)",
			"templates/deployment.yaml:21"}), out)
	})
	t.Run("post-renderers: a field a patch or an image entry sets traces to its line", func(t *testing.T) {
		g := NewWithT(t)
		const patched = "testdata/helm-fleet/apps/web-patched/release.yaml"
		out, err := runTraceCmd("--chart", chartDir, "--helmrelease", patched+"#web", "Deployment/web/web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(HavePrefix("# apps/v1/Deployment/web/web, as the chart renders it, after the HelmRelease's post-renderers\n"))
		g.Expect(columns(out)).To(ContainElements(
			// Not patched: as the chart renders it.
			[]string{"/spec/replicas", "3", "replicaCount", patched + ":19:19", "templates/deployment.yaml:6"},
			// A strategic-merge patch, its list element by name: the
			// line in the block, and the chart's template of the field.
			[]string{"/spec/template/spec/containers/0/resources/limits/memory", `"1Gi"`, "post-renderer", patched + ":38:37",
				"templates/deployment.yaml:21"},
			// A container only the patch adds: no template.
			[]string{"/spec/template/spec/containers/1/image", `"envoyproxy/envoy:v1.30.1"`, "post-renderer", patched + ":40:32", "-"},
			// The second post-renderer's image entry: its newTag.
			[]string{"/spec/template/spec/containers/0/image", `"ghcr.io/example/web:1.4.3"`, "post-renderer", patched + ":54:21",
				"templates/deployment.yaml:17"},
		), out)
		// A JSON6902 patch with a target: the operation's value.
		out, err = runTraceCmd("--chart", chartDir, "--helmrelease", patched, "ConfigMap/web-config")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(columns(out)).To(Equal([][]string{
			{"FIELD", "VALUE", "VALUES KEY", "ORIGIN", "TEMPLATE"},
			{"/apiVersion", `"v1"`, "template-literal", "-", "templates/configmap.yaml:1"},
			{"/data/greeting", `"welcome"`, "config.greeting", patched + ":21:17", "templates/configmap.yaml:6"},
			{"/data/logLevel", `"warn"`, "post-renderer", patched + ":47:24", "templates/_helpers.tpl:6"},
			{"/data/region", `"eu-west-1"`, "post-renderer", patched + ":50:24", "-"},
			{"/kind", `"ConfigMap"`, "template-literal", "-", "templates/configmap.yaml:2"},
			{"/metadata/name", `"web-config"`, "template-literal", "-", "templates/configmap.yaml:4"},
		}), out)
		t.Logf("reflux trace ... ConfigMap/web-config\n%s", out) // docs/trace.md shows it
		out, err = runTraceCmd("--chart", chartDir, "--helmrelease", patched, "-o", "json", "ConfigMap/web-config", "/data/logLevel")
		g.Expect(err).NotTo(HaveOccurred())
		var got struct {
			Fields []chartField `json:"fields"`
		}
		g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed())
		g.Expect(got.Fields).To(Equal([]chartField{{Pointer: "/data/logLevel", Value: `"warn"`,
			traced: traced{Kind: "post-renderer", Origin: patched + ":47:24", Template: "templates/_helpers.tpl:6"}}}))
		// A field the object does not have after them.
		_, err = runTraceCmd("--chart", chartDir, "--helmrelease", patched, "ConfigMap/web-config", "/data/nope")
		g.Expect(err).To(MatchError("field not found: /data/nope in v1/ConfigMap/web/web-config"))
	})
	t.Run("bad input is a clear error", func(t *testing.T) {
		g := NewWithT(t)
		_, err := runTraceCmd("--helmrelease", hrFile+"#web", "Deployment/web/web")
		g.Expect(err).To(MatchError("--helmrelease FILE#NAME needs --chart, the chart's folder or packaged .tgz"))
		_, err = runTraceCmd("--chart", chartDir, "--helmrelease", hrFile+"#api", "Deployment/web/web")
		g.Expect(err).To(MatchError(hrFile + ` has no HelmRelease "api"`))
		_, err = runTraceCmd("--chart", chartDir, "--helmrelease", hrFile, "Deployment/web/api")
		g.Expect(err).To(MatchError("the chart renders no Deployment/web/api for release web/web"))
		_, err = runTraceCmd("--chart", chartDir, "--helmrelease", hrFile, "--values", "testdata/nope.yaml", "Deployment/web/web")
		g.Expect(err).To(MatchError(ContainSubstring("testdata/nope.yaml")))
		_, err = runTraceCmd("--chart", "testdata/nope", "--helmrelease", hrFile, "Deployment/web/web")
		g.Expect(err).To(MatchError(ContainSubstring("testdata/nope")))
	})
}
