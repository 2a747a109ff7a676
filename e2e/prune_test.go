package e2e

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestPruneSparesHeldObjects removes two objects from git: Flux prunes the
// plain one, but not the one held in-cluster with reconcile: disabled. It
// also exercises the push -> new revision -> apply path write-back relies on.
func TestPruneSparesHeldObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	app := fixture.NewApp(t, env, "prune", fixture.AppOptions{Dir: "testdata/prune/v1", FluxOnly: true})
	held := &corev1.ConfigMap{}
	held.Name, held.Namespace = "held", app.Name
	g.Expect(env.Client.Patch(ctx, held, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/reconcile":"disabled"}}}`)),
		client.FieldOwner("reflux"))).To(Succeed())

	v2, err := env.Git.PushDir(ctx, app.Repo, "testdata/prune/v2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Reconcile(ctx, app.Source)).To(Succeed())
	g.Expect(app.Source.Status.Artifact.Revision).To(Equal(testenv.DefaultBranch + "@sha1:" + v2))
	ks := app.Kustomization()
	g.Expect(env.Reconcile(ctx, ks)).To(Succeed())
	g.Expect(ks.Status.LastAppliedRevision).To(Equal(testenv.DefaultBranch + "@sha1:" + v2))

	get := func(name string) error {
		return env.Client.Get(ctx, types.NamespacedName{Namespace: app.Name, Name: name}, &corev1.ConfigMap{})
	}
	g.Expect(get("keep")).To(Succeed())
	g.Expect(apierrors.IsNotFound(get("gone"))).To(BeTrue(), "removed from git, pruned")
	g.Expect(get("held")).To(Succeed(), "removed from git but held, not pruned")
}
