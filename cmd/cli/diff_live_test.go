package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func runDiffCmd(args ...string) (string, error) {
	cmd := NewDiffCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"kustomization"}, args...))
	err := cmd.Execute()
	return out.String(), err
}

// TestDiffLive runs `reflux diff kustomization NS/NAME` against a real
// apiserver, source-controller and kustomize-controller serving
// testdata/live-fleet: nothing drifts after Flux applied it; then a
// scaled Deployment and a deleted ConfigMap are drift, with their
// origins, in text and JSON, and exit with ErrDrift; and --path compares
// a local checkout with the live cluster.
func TestDiffLive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes and Flux environment")
	}
	g := NewWithT(t)
	env, _ := liveFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kube := []string{"flux-system/apps", "--kubeconfig", env.KubeconfigPath}

	out, err := runDiffCmd(kube...)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.Split(strings.TrimSpace(out), "\n")).To(Equal([]string{
		"# Kustomization flux-system/apps, artifact " + firstField(out, "artifact ") + " against the live cluster (applied: " +
			firstField(out, "(applied: ") + "), policy none (default rules)",
		"# no drift in 2 object(s)",
	}))

	// At 2 AM: the Deployment scaled by hand, the flags ConfigMap deleted.
	deploy := &metav1.PartialObjectMetadata{}
	deploy.SetGroupVersionKind(appsV1Deployment)
	deploy.SetName("podinfo")
	deploy.SetNamespace("podinfo")
	g.Expect(env.Client.Patch(ctx, deploy, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":7}}`)),
		client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Expect(env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "podinfo-flags", Namespace: "podinfo"}})).To(Succeed())

	t.Run("text: each drifted field with values, origin and rule; exit 1", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runDiffCmd(kube...)
		g.Expect(err).To(MatchError(ErrDrift))
		g.Expect(err).To(MatchError(ContainSubstring("2 field(s) in 2 object(s) of Kustomization flux-system/apps")))
		rows := columns(out)
		g.Expect(rows).To(ContainElements(
			[]string{"OBJECT", "FIELD", "CHANGE", "LIVE", "GIT", "ORIGIN", "RULE", "ACTION"},
			[]string{"Deployment/podinfo/podinfo", "/spec/replicas", "Update", "7", "4", "clusters/staging/apps.yaml:35:21", "default:replicas", "Alert low"},
			[]string{"ConfigMap/podinfo/podinfo-flags", "(object)", "Remove", "-", "-", "apps/podinfo/flags.yaml:4:9", "default:object-deleted", "Alert high"},
		), out)
		g.Expect(out).To(HaveSuffix("# 2 field(s) drifted in 2 of 2 object(s)\n"))
		t.Logf("reflux diff kustomization %s\n%s%v", kube[0], out, err) // docs/diff.md shows it
	})
	t.Run("json: one object per line", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runDiffCmd(append(kube, "-o", "json")...)
		g.Expect(err).To(MatchError(ErrDrift))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		g.Expect(lines).To(HaveLen(2))
		var d objectDiff
		g.Expect(json.Unmarshal([]byte(lines[0]), &d)).To(Succeed())
		g.Expect(d.Object).To(Equal("Deployment/podinfo/podinfo"))
		g.Expect(d.Fields).To(ConsistOf(diffField{Pointer: "/spec/replicas", Change: "Update", Live: "7", Git: "4",
			Origin: "clusters/staging/apps.yaml:35:21", Rule: "default:replicas", Action: "Alert", Severity: "low", FluxReverts: true}))
	})
	t.Run("--path: a local checkout against the live cluster", func(t *testing.T) {
		g := NewWithT(t)
		// The checkout moves the image on and no longer declares the
		// flags ConfigMap. What pushing it would revert is the live edit
		// of replicas: the new image is the author's own change, not
		// drift, and the deleted ConfigMap is what the checkout wants.
		dir := t.TempDir()
		g.Expect(os.CopyFS(dir, os.DirFS("testdata/live-fleet"))).To(Succeed())
		replace(g, filepath.Join(dir, "apps/podinfo/deployment.yaml"), "podinfo:6.7.1", "podinfo:6.8.0")
		replace(g, filepath.Join(dir, "apps/podinfo/kustomization.yaml"), "  - flags.yaml\n", "")
		out, err := runDiffCmd(append(kube, "--path", dir)...)
		g.Expect(err).To(MatchError(ErrDrift))
		g.Expect(out).To(HavePrefix("# Kustomization flux-system/apps, local checkout " + dir + " against the live cluster"))
		g.Expect(columns(out)).To(Equal([][]string{
			{"OBJECT", "FIELD", "CHANGE", "LIVE", "GIT", "ORIGIN", "RULE", "ACTION"},
			{"Deployment/podinfo/podinfo", "/spec/replicas", "Update", "7", "4", "clusters/staging/apps.yaml:35:21", "default:replicas", "Alert low"},
		}), out)
		g.Expect(out).To(HaveSuffix("# 1 field(s) drifted in 1 of 1 object(s)\n"))
	})
	t.Run("bad input is a clear error", func(t *testing.T) {
		g := NewWithT(t)
		_, err := runDiffCmd("flux-system/nope", "--kubeconfig", env.KubeconfigPath)
		g.Expect(err).To(MatchError(ContainSubstring(`getting Kustomization flux-system/nope: kustomizations.kustomize.toolkit.fluxcd.io "nope" not found`)))
		_, err = runDiffCmd("apps", "--kubeconfig", env.KubeconfigPath)
		g.Expect(err).To(MatchError(ContainSubstring(`want NAMESPACE/NAME of a Kustomization in the cluster, got "apps"`)))
		_, err = runDiffCmd(append(kube, "-o", "yaml")...)
		g.Expect(err).To(MatchError(`unknown output format "yaml"`))
	})
}

// replace rewrites old to new in file, once.
func replace(g Gomega, file, old, new string) {
	data, err := os.ReadFile(file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring(old))
	g.Expect(os.WriteFile(file, []byte(strings.Replace(string(data), old, new, 1)), 0o644)).To(Succeed())
}

// columns splits the table's rows into cells: two or more spaces apart.
func columns(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(line, "  ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		rows = append(rows, cells)
	}
	return rows
}

// firstField is the word after prefix in out, up to a space, comma or
// closing parenthesis: a revision the test cannot know in advance.
func firstField(out, prefix string) string {
	_, rest, ok := strings.Cut(out, prefix)
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, " ,)"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
