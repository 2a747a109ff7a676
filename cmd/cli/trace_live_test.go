package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/record"
)

// TestTraceLive runs `reflux trace --kustomization NS/NAME` against a real
// apiserver, source-controller and kustomize-controller serving
// testdata/live-fleet from the git server: the spec, the artifact and the
// substituteFrom ConfigMap all come from the cluster.
func TestTraceLive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes and Flux environment")
	}
	g := NewWithT(t)
	env, ks := liveFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Someone scales the Deployment by hand at 2 AM.
	deploy := &metav1.PartialObjectMetadata{}
	deploy.SetGroupVersionKind(appsV1Deployment)
	deploy.SetName("podinfo")
	deploy.SetNamespace("podinfo")
	g.Expect(env.Client.Patch(ctx, deploy, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":7}}`)),
		client.FieldOwner("kubectl-edit"))).To(Succeed())
	// reflux's drift engine would have written this record (e2e/drift
	// covers that journey); here it stands for the open one trace reads.
	drift := openDrift(ks)
	g.Expect(env.Client.Create(ctx, drift)).To(Succeed())
	drift.Status.State = refluxv1.DriftHeld
	g.Expect(env.Client.Status().Update(ctx, drift)).To(Succeed())

	kube := []string{"--kubeconfig", env.KubeconfigPath, "--kustomization", "flux-system/apps"}
	t.Run("live and Git value, the declaration and the open drift", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runTraceCmd(append(kube, "Deployment/podinfo/podinfo", "/spec/replicas")...)
		g.Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(strings.TrimSpace(out), "\n")
		g.Expect(lines[0]).To(HavePrefix("# Kustomization flux-system/apps, artifact main@sha1:"))
		g.Expect(lines).To(ContainElements(
			"live:  7",
			"git:   4",
			"drift: "+drift.Name+"  Held  (Update, Merge high)",
			"# paths relative to the repository root",
			"clusters/staging/apps.yaml:35:21  kustomization-spec",
			"  apps/podinfo/deployment.yaml:6:13  resource",
		))
	})
	t.Run("a substituted value comes from the cluster's ConfigMap", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runTraceCmd(append(kube, "-o", "json", "Deployment/podinfo/podinfo", "/spec/template/spec/containers/0/env/0/value")...)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring(`"liveValue":"\"hello from staging-eu\""`))
		g.Expect(out).To(ContainSubstring(`"gitValue":"\"hello from staging-eu\""`))
		g.Expect(out).To(ContainSubstring(`"file":"ConfigMap/cluster-vars"`))
		g.Expect(out).To(ContainSubstring(`"variable":"CLUSTER_NAME"`))
	})
	t.Run("without a pointer, every field with its origin", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runTraceCmd(append(kube, "Deployment/podinfo/podinfo")...)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.Split(strings.TrimSpace(out), "\n")).To(ContainElements(
			"/spec/replicas  clusters/staging/apps.yaml:35:21  kustomization-spec",
			"/spec/template/spec/containers/0/image  apps/podinfo/deployment.yaml:17:18  resource",
		))
		g.Expect(out).NotTo(ContainSubstring("drift:"))
	})
	t.Run("an unknown Kustomization is a clear error", func(t *testing.T) {
		g := NewWithT(t)
		_, err := runTraceCmd("--kubeconfig", env.KubeconfigPath, "--kustomization", "flux-system/nope", "Deployment/podinfo/podinfo", "/spec/replicas")
		g.Expect(err).To(MatchError(ContainSubstring(`getting Kustomization flux-system/nope: kustomizations.kustomize.toolkit.fluxcd.io "nope" not found`)))
	})
}

// liveFleet serves testdata/live-fleet from the git server to a real
// apiserver, source-controller and kustomize-controller, and applies the
// Kustomization clusters/staging/apps.yaml declares, substituteFrom
// ConfigMap and all.
func liveFleet(t *testing.T) (*testenv.Env, *kustomizev1.Kustomization) {
	t.Helper()
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(refluxv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	env := testenv.New(t, testenv.WithOptions(testenv.Options{Scheme: scheme, RepoRoot: "../.."}))
	vars := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-vars", Namespace: "flux-system"},
		Data: map[string]string{"CLUSTER_NAME": "staging-eu"}}
	return env, applyFleet(t, env, "testdata/live-fleet", []string{"flux-system", "podinfo"}, vars)
}

// applyFleet pushes the cluster repository dir as fleet.git and has Flux
// apply the Kustomization it declares in clusters/staging/apps.yaml,
// "apps", as the cluster would: it creates namespaces and extra (what the
// Kustomization needs before it builds, such as substituteFrom data),
// then the GitRepository and the Kustomization, and waits until Flux
// applied it.
func applyFleet(t *testing.T, env *testenv.Env, dir string, namespaces []string, extra ...client.Object) *kustomizev1.Kustomization {
	t.Helper()
	return applyFleetAt(t, env, dir, "", namespaces, extra...)
}

// helmWeb starts a Kubernetes and Flux environment with helm-controller,
// has Flux apply testdata/helm-fleet at path ("" for the tree's own
// Kustomization path), and waits until helm-controller has installed the
// HelmRelease web/web. The context ends with the test.
func helmWeb(t *testing.T, path string) (*testenv.Env, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Kubernetes and Flux environment")
	}
	g := NewWithT(t)
	scheme, err := manager.NewScheme()
	g.Expect(err).NotTo(HaveOccurred())
	env := testenv.New(t, testenv.WithOptions(testenv.Options{Scheme: scheme, RepoRoot: "../..", Helm: true}))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	applyFleetAt(t, env, "testdata/helm-fleet", path, []string{"flux-system", "web"})
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"}}
	g.Expect(env.WaitForReady(ctx, hr)).To(Succeed())
	return env, ctx
}

// applyFleetAt is applyFleet with the Kustomization's spec.path set to
// path, when it is not "".
func applyFleetAt(t *testing.T, env *testenv.Env, dir, path string, namespaces []string, extra ...client.Object) *kustomizev1.Kustomization {
	t.Helper()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, ns := range namespaces {
		g.Expect(client.IgnoreAlreadyExists(env.CreateNamespace(ctx, ns))).To(Succeed())
	}
	for _, obj := range extra {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	_, err := env.Git.PushDir(ctx, "fleet.git", dir)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: "fleet", Namespace: "flux-system", Repo: "fleet.git"})
	g.Expect(err).NotTo(HaveOccurred())
	// The cluster's Kustomization is the one the repository declares.
	declared, err := kustomize.SelectKustomization(filepath.Join(dir, "clusters/staging/apps.yaml"), "apps")
	g.Expect(err).NotTo(HaveOccurred())
	ks, err := env.CreateKustomization(ctx, testenv.KustomizationOptions{Name: "apps", Namespace: "flux-system", Source: "fleet",
		Customize: func(k *kustomizev1.Kustomization) {
			source := k.Spec.SourceRef
			k.Spec = declared.Spec
			k.Spec.SourceRef = source
			if path != "" {
				k.Spec.Path = path
			}
		}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.WaitForReady(ctx, ks)).To(Succeed())
	return ks
}

var appsV1Deployment = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// openDrift is the record reflux keeps for the scaled Deployment.
func openDrift(ks *kustomizev1.Kustomization) *refluxv1.Drift {
	ksRef := refluxv1.KustomizationRef{Name: ks.Name, Namespace: ks.Namespace}
	obj := refluxv1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "podinfo", Name: "podinfo"}
	now := metav1.Now()
	return &refluxv1.Drift{
		ObjectMeta: metav1.ObjectMeta{Name: record.Name(ksRef, obj), Namespace: ks.Namespace},
		Spec: refluxv1.DriftSpec{Kustomization: ksRef, Policy: "podinfo", Object: obj, FirstSeen: now, LastSeen: now,
			Fields: []refluxv1.DriftField{{Pointer: "/spec/replicas", ChangeType: refluxv1.ChangeUpdate, GitValue: "4", LiveValue: "7",
				Action: refluxv1.MergeAction, Severity: refluxv1.SeverityHigh, FluxReverts: true}}},
	}
}

// TestTraceLiveHelmRelease runs `reflux trace --helmrelease NS/NAME`
// against a real apiserver, source-controller, kustomize-controller and
// helm-controller: a Flux Kustomization applies testdata/helm-fleet's
// apps/web-patched, whose post-renderers helm-controller applies to the
// chart's render. The trace applies them too, and a field they set traces
// to the patch's line in the Kustomization's tree.
func TestTraceLiveHelmRelease(t *testing.T) {
	env, ctx := helmWeb(t, "./apps/web-patched")
	g := NewWithT(t)

	out, stderr, err := runTraceCmdErr("--helmrelease", "web/web", "--kubeconfig", env.KubeconfigPath, "Deployment/web/web")
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(stderr).To(BeEmpty())
	g.Expect(out).To(HavePrefix("# apps/v1/Deployment/web/web, as the chart renders it, after the HelmRelease's post-renderers\n"))
	g.Expect(columns(out)).To(ContainElements(
		[]string{"/spec/replicas", "3", "replicaCount", "apps/web-patched/release.yaml:19:19", "templates/deployment.yaml:6"},
		[]string{"/spec/template/spec/containers/0/resources/limits/memory", `"1Gi"`, "post-renderer", "apps/web-patched/release.yaml:38",
			"templates/deployment.yaml:21"},
		[]string{"/spec/template/spec/containers/1/image", `"envoyproxy/envoy:v1.30.1"`, "post-renderer", "apps/web-patched/release.yaml:40", "-"},
		[]string{"/spec/template/spec/containers/0/image", `"ghcr.io/example/web:1.4.3"`, "post-renderer",
			"apps/web-patched/release.yaml:54:21", "templates/deployment.yaml:17"},
	), out)
	// What helm-controller deployed is what the trace post-rendered.
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(appsV1Deployment)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "web", Name: "web"}, live)).To(Succeed())
	g.Expect(jsonValue(live.Object, "/spec/template/spec/containers/1/image")).To(Equal(`"envoyproxy/envoy:v1.30.1"`))
	g.Expect(jsonValue(live.Object, "/spec/template/spec/containers/0/image")).To(Equal(`"ghcr.io/example/web:1.4.3"`))
}

// TestTraceLiveHelmReleaseFrom traces what `reflux trace --helmrelease
// NAMESPACE/NAME` reads of a cluster, served by fakeLive: the release's
// chart and values go through the HelmRelease's post-renderers, as
// offline, and a field they set traces to the patch's line in the tree of
// the Kustomization that applies the HelmRelease, or, where that tree
// cannot be read, is refused as post-renderer.
func TestTraceLiveHelmReleaseFrom(t *testing.T) {
	const (
		web     = "testdata/helm-fleet/apps/web/release.yaml"
		patched = "testdata/helm-fleet/apps/web-patched/release.yaml"
		memory  = "/spec/template/spec/containers/0/resources/limits/memory"
		header  = "# apps/v1/Deployment/web/web, as the chart renders it, after the HelmRelease's post-renderers\n"
	)
	noTree := errors.New(`getting Kustomization flux-system/apps, which applied the HelmRelease: not found`)
	for _, c := range []struct {
		name string
		src  fakeLive
		args []string
		// header is the output's first line; rows its fields.
		header string
		rows   [][]string
		stderr string
	}{{
		name: "a field a patch or an image entry sets: its line in the tree",
		src:  fakeLive{file: patched, tree: "apps/web-patched"}, args: []string{"Deployment/web/web"}, header: header,
		rows: [][]string{
			// Not patched: as the chart renders it, at its values line.
			{"/spec/replicas", "3", "replicaCount", "apps/web-patched/release.yaml:19:19", "templates/deployment.yaml:6"},
			// The index knows the patch's line, not the block's indentation.
			{memory, `"1Gi"`, "post-renderer", "apps/web-patched/release.yaml:38", "templates/deployment.yaml:21"},
			{"/spec/template/spec/containers/1/image", `"envoyproxy/envoy:v1.30.1"`, "post-renderer", "apps/web-patched/release.yaml:40", "-"},
			{"/spec/template/spec/containers/0/image", `"ghcr.io/example/web:1.4.3"`, "post-renderer", "apps/web-patched/release.yaml:54:21",
				"templates/deployment.yaml:17"},
		},
	}, {
		// docs/trace.md shows it.
		name: "a JSON6902 patch with a target: the operation's value",
		src:  fakeLive{file: patched, tree: "apps/web-patched"}, args: []string{"ConfigMap/web-config"},
		header: "# v1/ConfigMap/web/web-config, as the chart renders it, after the HelmRelease's post-renderers\n",
		rows: [][]string{
			{"FIELD", "VALUE", "VALUES KEY", "ORIGIN", "TEMPLATE"},
			{"/apiVersion", `"v1"`, "template-literal", "-", "templates/configmap.yaml:1"},
			{"/data/greeting", `"welcome"`, "config.greeting", "apps/web-patched/release.yaml:21:17", "templates/configmap.yaml:6"},
			{"/data/logLevel", `"warn"`, "post-renderer", "apps/web-patched/release.yaml:47", "templates/_helpers.tpl:6"},
			{"/data/region", `"eu-west-1"`, "post-renderer", "apps/web-patched/release.yaml:50", "-"},
			{"/kind", `"ConfigMap"`, "template-literal", "-", "templates/configmap.yaml:2"},
			{"/metadata/name", `"web-config"`, "template-literal", "-", "templates/configmap.yaml:4"},
		},
	}, {
		name: "no tree: a field a post-renderer sets is refused as post-renderer",
		src:  fakeLive{file: patched, treeErr: noTree}, args: []string{"Deployment/web/web"}, header: header,
		rows: [][]string{
			{"/spec/replicas", "3", "replicaCount", "-", "templates/deployment.yaml:6"},
			{memory, `"1Gi"`, "post-renderer", "post-renderer", "templates/deployment.yaml:21"},
		},
		stderr: "warning: values and post-renderer lines will be missing: " + noTree.Error() + "\n",
	}, {
		name: "no post-renderers: the chart's own render",
		src:  fakeLive{file: web, tree: "apps/web"}, args: []string{"Deployment/web/web", "/spec/replicas"},
		header: "# apps/v1/Deployment/web/web, as the chart renders it\n",
		rows:   [][]string{{"/spec/replicas", "3", "replicaCount", "apps/web/release.yaml:25:19", "templates/deployment.yaml:6"}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			out, stderr, err := c.src.trace(c.args...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(HavePrefix(c.header))
			g.Expect(columns(out)).To(ContainElements(c.rows), out)
			g.Expect(stderr).To(Equal(c.stderr))
		})
	}
	t.Run("refused: the why, in JSON", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := fakeLive{file: patched, treeErr: noTree}.trace("-o", "json", "ConfigMap/web-config", "/data/logLevel")
		g.Expect(err).NotTo(HaveOccurred())
		var got struct {
			Fields []chartField `json:"fields"`
		}
		g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed())
		g.Expect(got.Fields).To(Equal([]chartField{{Pointer: "/data/logLevel", Value: `"warn"`, traced: traced{Kind: "post-renderer",
			Refused: "post-renderer: a post-renderer of the HelmRelease (spec.postRenderers) sets the field after the chart " +
				`renders it; the chart alone renders "info"`, Template: "templates/_helpers.tpl:6"}}}))
	})
	t.Run("a HelmRelease the cluster does not have is an error", func(t *testing.T) {
		g := NewWithT(t)
		_, err := liveChartFrom(context.Background(), &cobra.Command{}, fakeLive{file: patched}, "web", "api")
		g.Expect(err).To(MatchError(`getting HelmRelease web/api: helmreleases.helm.toolkit.fluxcd.io "api" not found`))
	})
}

// fakeLive is a cluster as the live chart trace reads it: the HelmRelease
// of file, with a release of testdata/helm-fleet's chart made from the
// file's values, and the Kustomization that applies it building tree (a
// folder of testdata/helm-fleet), or failing with treeErr.
type fakeLive struct {
	file, tree string
	treeErr    error
}

var _ liveSource = fakeLive{}

// trace runs the live trace of HelmRelease web/web over f: the object
// and a pointer, and "-o json" first for JSON. It returns stdout and
// stderr.
func (f fakeLive) trace(args ...string) (string, string, error) {
	asJSON := len(args) > 2 && args[0] == "-o" && args[1] == "json"
	if asJSON {
		args = args[2:]
	}
	ref, err := parseObjectRef(args[0])
	if err != nil {
		return "", "", err
	}
	var out, stderr bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetOut(&out)
	cmd.SetErr(&stderr)
	in, err := liveChartFrom(context.Background(), cmd, f, "web", "web")
	if err == nil {
		err = traceChart(&out, asJSON, in, ref, args[1:])
	}
	return out.String(), stderr.String(), err
}

func (f fakeLive) helmRelease(_ context.Context, ns, name string) (*helmv2.HelmRelease, error) {
	doc, err := helmReleaseFile(f.file)
	if err != nil {
		return nil, err
	}
	hr := doc.hr
	if hr.Namespace != ns || hr.Name != name {
		return nil, fmt.Errorf("getting HelmRelease %s/%s: %w", ns, name,
			apierrors.NewNotFound(helmv2.GroupVersion.WithResource("helmreleases").GroupResource(), name))
	}
	return hr, nil
}

// release is the chart rendered with the file's values, over the values
// file its spec.valuesFrom names, as helm-controller merges them; the
// second revision, an upgrade.
func (f fakeLive) release(context.Context, *helmv2.HelmRelease) (chartInput, error) {
	doc, err := helmReleaseFile(f.file)
	if err != nil {
		return chartInput{}, err
	}
	var from []string
	if len(doc.hr.Spec.ValuesFrom) > 0 {
		from = []string{"testdata/helm-fleet/apps/web/values.yaml"}
	}
	values, _, err := withValuesFiles(doc.values.values, from)
	if err != nil {
		return chartInput{}, err
	}
	ch, err := chart.Load("testdata/helm-fleet/charts/web")
	if err != nil {
		return chartInput{}, err
	}
	rel := doc.release
	rel.Revision, rel.IsUpgrade = 2, true
	return chartInput{chart: ch, values: values, release: rel}, nil
}

// gitLines builds the tree as kustomize-controller would from the
// repository's root, so files are named as in the Kustomization's
// artifact.
func (f fakeLive) gitLines(ctx context.Context, _ ioCmd, hr *helmv2.HelmRelease) (valuesLines, error) {
	if f.treeErr != nil {
		return nil, f.treeErr
	}
	idx, res, err := origin.Build(ctx, kustomize.BuildOptions{Root: "testdata/helm-fleet", Path: f.tree})
	if err != nil {
		return nil, err
	}
	for _, o := range res.Objects {
		if o.GetKind() == helmv2.HelmReleaseKind && o.GetNamespace() == hr.Namespace && o.GetName() == hr.Name {
			return gitValues{idx: idx, hr: origin.RefOf(o)}, nil
		}
	}
	return nil, fmt.Errorf("%s renders no HelmRelease %s/%s", f.tree, hr.Namespace, hr.Name)
}
