package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func runDiffHelmCmd(args ...string) (string, string, error) {
	cmd := NewDiffCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"helmrelease"}, args...))
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

// TestDiffHelmReleaseLive runs `reflux diff helmrelease NS/NAME` against a
// real apiserver, source-controller, kustomize-controller and
// helm-controller: a Flux Kustomization applies testdata/helm-fleet's
// HelmRelease, and helm-controller installs its chart from the same
// repository. Nothing drifts after the install. Then live edits of the
// chart's objects are drift, each traced to its values key and the line
// of Git that sets it (or where to add it), and to the chart template.
func TestDiffHelmReleaseLive(t *testing.T) {
	env, ctx := helmWeb(t, "")
	g := NewWithT(t)
	kube := []string{"web/web", "--kubeconfig", env.KubeconfigPath}

	out, _, err := runDiffHelmCmd(kube...)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.Split(strings.TrimSpace(out), "\n")).To(Equal([]string{
		"# HelmRelease web/web, release web/web.v1 (chart web 0.1.0) against the live cluster, drift detection warn",
		"# no drift in 2 object(s)",
	}))

	// At 2 AM: the Deployment scaled, its image rolled back and its
	// memory limit raised 4x, and the log level turned up, all by hand.
	deploy := &metav1.PartialObjectMetadata{}
	deploy.SetGroupVersionKind(appsV1Deployment)
	deploy.SetName("web")
	deploy.SetNamespace("web")
	g.Expect(env.Client.Patch(ctx, deploy, client.RawPatch("application/strategic-merge-patch+json",
		[]byte(`{"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"web","image":"ghcr.io/example/web:1.4.1",`+
			`"resources":{"limits":{"memory":"2Gi"}}}]}}}}`)),
		client.FieldOwner("kubectl-edit"))).To(Succeed())
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "web", Name: "web-config"}, cm)).To(Succeed())
	cm.Data["logLevel"] = "debug"
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())

	t.Run("text: each field with its values key, Git line and template; exit 1", func(t *testing.T) {
		g := NewWithT(t)
		out, stderr, err := runDiffHelmCmd(kube...)
		g.Expect(err).To(MatchError(ErrDrift))
		g.Expect(err).To(MatchError(ContainSubstring("4 field(s) in 2 object(s) of HelmRelease web/web")))
		g.Expect(stderr).To(BeEmpty())
		// In the release's order: helm-controller's, and Helm's install
		// order.
		g.Expect(columns(out)).To(Equal([][]string{
			[]string{"OBJECT", "FIELD", "CHANGE", "LIVE", "CHART", "VALUES KEY", "ORIGIN", "TEMPLATE", "REVERTED AT", "RULE", "ACTION"},
			// Only the chart's values.yaml sets the log level, through a
			// named template: where to add it to the HelmRelease.
			[]string{"ConfigMap/web/web-config", "/data/logLevel", "Update", `"debug"`, `"info"`, "config.logLevel",
				"chart-default (add at apps/web/release.yaml:25)", "templates/_helpers.tpl:6", "Upgrade", "default:unmatched", "Alert medium"},
			// spec.values sets replicaCount: its line in the HelmRelease.
			[]string{"Deployment/web/web", "/spec/replicas", "Update", "5", "3", "replicaCount", "apps/web/release.yaml:25:19",
				"templates/deployment.yaml:6", "Upgrade", "default:replicas", "Alert low"},
			// repository and tag make the image: computed from both keys.
			// An older tag is a rollback: a high Alert.
			[]string{"Deployment/web/web", "/spec/template/spec/containers/0/image", "Update", `"ghcr.io/example/web:1.4.1"`,
				`"ghcr.io/example/web:1.4.2"`, "computed: image.repository+image.tag", "-", "templates/deployment.yaml:17", "Upgrade",
				"default:image", "Alert high"},
			// Set through spec.valuesFrom, a ConfigMap the Kustomization
			// generates from a file: the line in that file. Raised 4x: a
			// critical Alert, which pages.
			[]string{"Deployment/web/web", "/spec/template/spec/containers/0/resources/limits/memory", "Update", `"2Gi"`, `"512Mi"`,
				"resources.limits.memory", "apps/web/values.yaml:4:13", "templates/deployment.yaml:21", "Upgrade",
				"default:resources", "Alert critical"},
		}), out)
		g.Expect(out).To(HavePrefix("# HelmRelease web/web, release web/web.v1 (chart web 0.1.0) against the live cluster, drift detection warn\n"))
		g.Expect(out).To(HaveSuffix("# 4 field(s) drifted in 2 of 2 object(s)\n"))
		t.Logf("reflux diff helmrelease %s\n%s%v", kube[0], out, err) // docs/diff.md shows it
	})
	t.Run("json: one object per line", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := runDiffHelmCmd(append(kube, "-o", "json")...)
		g.Expect(err).To(MatchError(ErrDrift))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		g.Expect(lines).To(HaveLen(2))
		var d helmObjectDiff
		g.Expect(json.Unmarshal([]byte(lines[0]), &d)).To(Succeed())
		g.Expect(d).To(Equal(helmObjectDiff{HelmRelease: "web/web", Object: "ConfigMap/web/web-config", APIVersion: "v1",
			RevertedAt: "Upgrade", Fields: []helmDiffField{{Pointer: "/data/logLevel", Change: "Update", Live: `"debug"`, Chart: `"info"`,
				Kind: "chart-default", Keys: []string{"config.logLevel"},
				Refused: "chart-default: the chart's values.yaml sets config.logLevel; add it under spec.values",
				EditAt:  "apps/web/release.yaml:25", Template: "templates/_helpers.tpl:6",
				Rule: "default:unmatched", Action: "Alert", Severity: "medium"}}}))
	})
	t.Run("trace --helmrelease NAMESPACE/NAME: the release's chart and values, the line in Git", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runTraceCmd("--helmrelease", "web/web", "--kubeconfig", env.KubeconfigPath, "Deployment/web/web", "/spec/replicas")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(columns(out)).To(Equal([][]string{
			{"FIELD", "VALUE", "VALUES KEY", "ORIGIN", "TEMPLATE"},
			{"/spec/replicas", "3", "replicaCount", "apps/web/release.yaml:25:19", "templates/deployment.yaml:6"},
		}), out)
	})
	t.Run("an object deleted live is drift of the whole object, at its template", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: "web"}})).To(Succeed())
		out, _, err := runDiffHelmCmd(kube...)
		g.Expect(err).To(MatchError(ContainSubstring("4 field(s) in 2 object(s) of HelmRelease web/web")))
		g.Expect(columns(out)).To(ContainElement(
			[]string{"ConfigMap/web/web-config", "(object)", "Remove", "-", "-", "-", "-", "templates/configmap.yaml:4", "Upgrade",
				"default:object-deleted", "Alert high"}), out)
	})
	t.Run("bad input is a clear error", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := runDiffHelmCmd("web/nope", "--kubeconfig", env.KubeconfigPath)
		g.Expect(err).To(MatchError(ContainSubstring(`getting HelmRelease web/nope: helmreleases.helm.toolkit.fluxcd.io "nope" not found`)))
		_, _, err = runDiffHelmCmd("web", "--kubeconfig", env.KubeconfigPath)
		g.Expect(err).To(MatchError(ContainSubstring(`want NAMESPACE/NAME of a HelmRelease in the cluster, got "web"`)))
	})
}
