package controllers

import (
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reflux-dev/reflux/reverse/desired"
)

func TestWatchedKinds(t *testing.T) {
	g := NewWithT(t)
	ks := &kustomizev1.Kustomization{}
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
		{ID: "podinfo_podinfo_apps_Deployment", Version: "v1"},
		{ID: "podinfo_podinfo-flags__ConfigMap", Version: "v1"},
		{ID: "_podinfo__Namespace", Version: "v1"},
		{ID: "malformed", Version: "v1"},
	}}
	render := &desired.Render{GVKs: []schema.GroupVersionKind{
		{Group: "", Version: "v1", Kind: "ConfigMap"}, {Group: "", Version: "v1", Kind: "Service"},
	}}
	g.Expect(watchedKinds(ks, render)).To(Equal([]schema.GroupVersionKind{
		{Group: "", Version: "v1", Kind: "ConfigMap"},
		{Group: "", Version: "v1", Kind: "Namespace"},
		{Group: "", Version: "v1", Kind: "Service"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
	}), "the inventory's kinds before any render, the render's besides")
	g.Expect(watchedKinds(&kustomizev1.Kustomization{}, nil)).To(BeEmpty())
}
