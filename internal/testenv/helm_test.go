package testenv_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// greetingChart is a chart written for these tests: one ConfigMap that
// renders replicaCount, so the installed object shows which values
// helm-controller used.
var greetingChart = map[string]string{
	"charts/greeting/Chart.yaml": `apiVersion: v2
name: greeting
description: One ConfigMap rendered from the values, for internal/testenv's tests.
version: 0.1.0
`,
	"charts/greeting/values.yaml": "replicaCount: 1\n",
	"charts/greeting/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  namespace: {{ .Release.Namespace }}
data:
  replicaCount: {{ .Values.replicaCount | quote }}
`,
}

// TestHelmReleaseOfAGitRepository runs the real helm-controller beside
// source-controller: the chart is pushed to the git server,
// source-controller builds it from the GitRepository into a HelmChart
// artifact, and helm-controller downloads that from source-controller's
// artifact server and installs it with the HelmRelease's values.
func TestHelmReleaseOfAGitRepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := testenv.New(t, testenv.WithHelm())
	g.Expect(e.HelmController).NotTo(BeNil())

	const ns = "helm-git"
	g.Expect(e.CreateNamespace(ctx, ns)).To(Succeed())
	_, err := e.Git.PushDir(ctx, "charts.git", writeTree(t, greetingChart))
	g.Expect(err).NotTo(HaveOccurred())
	repo, err := e.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: "charts", Namespace: ns, Repo: "charts.git"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.WaitForReady(ctx, repo)).To(Succeed())

	hr, err := e.CreateHelmRelease(ctx, testenv.HelmReleaseOptions{
		Name: "greeting", Namespace: ns, Source: repo.Name, Chart: "./charts/greeting",
		Values: map[string]any{"replicaCount": 3},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.WaitForReady(ctx, hr)).To(Succeed())

	// Ready means the install has finished, so the ConfigMap is there now.
	cm := &corev1.ConfigMap{}
	g.Expect(e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greeting-settings"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("replicaCount", "3"))
	g.Expect(managers(cm.ManagedFields)).To(ContainElement("helm-controller"),
		"helm-controller names itself as the field manager of what it installs")
}

// managers lists the field managers of an object.
func managers(fields []metav1.ManagedFieldsEntry) []string {
	var names []string
	for _, f := range fields {
		names = append(names, f.Manager)
	}
	return names
}

// TestHelmIsOptIn checks that an environment without Options.Helm, such as
// the package's shared one, runs no helm-controller and serves no
// HelmRelease kind.
func TestHelmIsOptIn(t *testing.T) {
	g := NewWithT(t)
	g.Expect(env.HelmController).To(BeNil())
	for _, p := range env.Processes() {
		g.Expect(p.Name).NotTo(Equal("helm-controller"))
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	err := env.Client.Get(context.Background(), client.ObjectKey{Name: "helmreleases.helm.toolkit.fluxcd.io"}, crd)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
}

// TestStartReportsMissingHelmController points Start at a bin directory
// with the other Flux controllers' CRDs but nothing of helm-controller's.
func TestStartReportsMissingHelmController(t *testing.T) {
	g := NewWithT(t)
	bin := t.TempDir()
	for _, name := range []string{"source-controller-crd", "kustomize-controller-crd"} {
		g.Expect(os.Mkdir(filepath.Join(bin, name), 0o700)).To(Succeed())
	}
	_, err := testenv.Start(context.Background(), testenv.Options{BinDir: bin, Helm: true})
	g.Expect(errors.Is(err, testenv.ErrMissingBinary)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(filepath.Join(bin, "helm-controller-crd")))
	g.Expect(err.Error()).To(ContainSubstring("make testbin"))
}

// TestHelmNeedsFlux: helm-controller cannot run without source-controller,
// so asking for both Helm and WithoutFlux is a mistake Start reports.
func TestHelmNeedsFlux(t *testing.T) {
	_, err := testenv.Start(context.Background(), testenv.Options{Helm: true, WithoutFlux: true})
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("WithoutFlux")))
}
