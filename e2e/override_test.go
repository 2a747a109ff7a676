package e2e

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestOverrideManagerRevertsAddedFields runs its own environment whose
// kustomize-controller has --override-manager=legacy-app: that manager's
// added key, which survives by default (TestFieldManagersAfterForcedReconcile),
// is then removed too.
func TestOverrideManagerRevertsAddedFields(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := testenv.New(t, testenv.WithOptions(testenv.Options{
		KustomizeControllerArgs: []string{"--override-manager=legacy-app"},
	}))
	const ns = "override"
	_, err := e.Git.PushDir(ctx, "override.git", "testdata/override")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.CreateNamespace(ctx, ns)).To(Succeed())
	repo, err := e.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: "override", Namespace: ns, Repo: "override.git"})
	g.Expect(err).NotTo(HaveOccurred())
	ks, err := e.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: "override", Namespace: ns, Source: repo.Name, Path: "./", TargetNamespace: ns, Prune: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.WaitForReady(ctx, ks)).To(Succeed())

	key := types.NamespacedName{Namespace: ns, Name: "overridden"}
	cm := &corev1.ConfigMap{}
	g.Expect(e.Client.Get(ctx, key, cm)).To(Succeed())
	cm.Data["LOG_LEVEL"], cm.Data["ADDED"] = "debug", "by-legacy-app"
	g.Expect(e.Client.Update(ctx, cm, client.FieldOwner("legacy-app"))).To(Succeed())
	g.Expect(e.Client.Get(ctx, key, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKey("ADDED"))

	g.Expect(e.Reconcile(ctx, ks)).To(Succeed())
	g.Expect(e.Client.Get(ctx, key, cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"LOG_LEVEL": "info"}))
	g.Expect(managers(cm)).To(Equal([]string{"kustomize-controller/Apply"}))
}
