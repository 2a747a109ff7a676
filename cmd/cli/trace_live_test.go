package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/kustomize"
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
