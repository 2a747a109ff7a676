package controllers

import (
	"context"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestHelmReleasesOf(t *testing.T) {
	g := NewWithT(t)
	ks := &kustomizev1.Kustomization{}
	g.Expect(helmReleasesOf(context.Background(), ks)).To(BeEmpty(), "no inventory yet")
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
		{ID: "apps_web_helm.toolkit.fluxcd.io_HelmRelease", Version: "v2"},
		{ID: "apps_web__ConfigMap", Version: "v1"},
		{ID: "apps_web_source.toolkit.fluxcd.io_HelmRepository", Version: "v1"},
		{ID: "infra_ingress_helm.toolkit.fluxcd.io_HelmRelease", Version: "v2"},
		{ID: "not-an-id", Version: "v2"},
	}}
	g.Expect(helmReleasesOf(context.Background(), ks)).To(Equal([]reconcile.Request{
		{NamespacedName: types.NamespacedName{Namespace: "apps", Name: "web"}},
		{NamespacedName: types.NamespacedName{Namespace: "infra", Name: "ingress"}},
	}))
}
