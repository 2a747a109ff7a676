package helmlive

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// shapedValues sets, in the HelmRelease's spec.values, every key the
// chart's named templates and its sidecar read: logLevel on line 21 of
// release/release.yaml, backend's host and port on 23 and 24, the
// sidecar's image on 27.
const shapedValues = `  values:
    logLevel: info
    backend:
      host: backend
      port: 8080
    sidecar:
      enabled: true
      image: registry.invalid/reflux/sidecar:1.0.0
`

// TestChartShapesTraceOrAreRefusedByName (issue 19 §5, against the real
// helm-controller): alice edits, in one `kubectl edit` of the chart's
// Deployment, a field for each shape of template. The sidecar, behind
// its condition, traces to sidecar.image's line; LOG_LEVEL, which the
// chart passes through a named template (include "app.logLevel"), traces
// to logLevel's line with the helper's line as its template. The image
// pull policy the template hard-codes is refused as template-literal,
// and BACKEND_URL, which app.backendURL builds of backend.host and
// backend.port, as computed: alice changed both parts, so no one values
// line would make it. Refused fields are still held and recorded: the
// refusal is only of a line to write back.
func TestChartShapesTraceOrAreRefusedByName(t *testing.T) {
	const (
		pullPolicy = "/spec/template/spec/containers/0/imagePullPolicy"
		logLevel   = "/spec/template/spec/containers/0/env/0/value"
		backendURL = "/spec/template/spec/containers/0/env/1/value"
		sidecar    = "/spec/template/spec/containers/1/image"
	)
	g := NewWithT(t)
	app := newApp(t, "shapes", "", shapedValues)
	deploy := app.Get(g, "app", &appsv1.Deployment{}).(*appsv1.Deployment)
	g.Expect(deploy.Spec.Template.Spec.Containers).To(HaveLen(2), "the sidecar is enabled")
	g.Expect(deploy.Spec.Template.Spec.Containers[0].Env).To(Equal([]corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"},
		{Name: "BACKEND_URL", Value: "http://backend:8080"}, {Name: "TZ", Value: "UTC"}}), "env from the helpers and from values")

	fixture.KubectlEdit(g, alice.Client, deploy, func() {
		c := &deploy.Spec.Template.Spec.Containers[0]
		c.ImagePullPolicy = corev1.PullAlways
		c.Env[0].Value = "debug"
		c.Env[1].Value = "http://elsewhere.invalid:9090"
		deploy.Spec.Template.Spec.Containers[1].Image = "registry.invalid/reflux/sidecar:0.9.0"
	})

	_, f := tracedField(g, app, sidecar, "")
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/release.yaml", Line: 27, Column: 14, Kind: "values",
		ValuesKeys: []string{"sidecar.image"}, Template: "templates/deployment.yaml:33"}))
	_, f = tracedField(g, app, logLevel, "")
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/release.yaml", Line: 21, Column: 15, Kind: "values",
		ValuesKeys: []string{"logLevel"}, Template: "templates/_helpers.tpl:6"}), "through include, to the key's line")
	_, f = tracedField(g, app, pullPolicy, "template-literal")
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{Kind: "template-literal", Refused: "template-literal",
		Why: "the chart hard-codes the value", Template: "templates/deployment.yaml:22"}))
	g.Expect([]string{f.GitValue, f.LiveValue}).To(Equal([]string{`"IfNotPresent"`, `"Always"`}))
	rec, f := tracedField(g, app, backendURL, "computed")
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{Kind: "computed", Refused: "computed",
		ValuesKeys: []string{"backend.host", "backend.port"}, Template: "templates/_helpers.tpl:14",
		Why: "the chart builds the value from backend.host+backend.port"}))
	g.Expect([]string{f.GitValue, f.LiveValue}).To(Equal([]string{`"http://backend:8080"`, `"http://elsewhere.invalid:9090"`}))

	g.Expect(rec.Spec.Fields).To(HaveLen(4), "only the edited fields drifted")
	for _, f := range rec.Spec.Fields {
		g.Expect(f.FluxReverts).To(BeTrue(), "%s: drift correction is enabled", f.Pointer)
	}
	g.Expect(rec.Status.State).To(Equal(refluxv1.DriftHeld))
	g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeTrue(), "refused fields are held as any other")
	reconciled(g, app)
	live := app.Get(g, "app", &appsv1.Deployment{}).(*appsv1.Deployment)
	g.Expect(live.Spec.Template.Spec.Containers[0].ImagePullPolicy).To(Equal(corev1.PullAlways),
		"helm-controller leaves the held edit alone")
}
