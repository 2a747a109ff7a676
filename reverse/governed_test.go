package reverse

import (
	"context"
	"maps"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse/desired"
)

func governed(mutate func(ks *kustomizev1.Kustomization, g *Governed)) *Governed {
	ks := &kustomizev1.Kustomization{}
	ks.Name, ks.Namespace, ks.Generation = "podinfo", "flux-system", 2
	ks.Status.ObservedGeneration = 2
	ks.Status.LastAppliedRevision = "main@sha1:1"
	ks.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue}}
	g := &Governed{Kustomization: ks, Policy: &refluxv1.ReverseSyncPolicy{}, SourceRevision: "main@sha1:1"}
	if mutate != nil {
		mutate(ks, g)
	}
	return g
}

func TestCurrent(t *testing.T) {
	applied := &desired.Render{Revision: "main@sha1:1", Generation: 2}
	tests := []struct {
		name             string
		g                *Governed
		render           *desired.Render
		rolling, current bool
	}{
		{"applied revision rendered", governed(nil), applied, false, true},
		{"no render yet", governed(nil), nil, false, false},
		{"render of an older revision", governed(nil), &desired.Render{Revision: "main@sha1:0", Generation: 2}, false, false},
		{"render of an older spec", governed(nil), &desired.Render{Revision: "main@sha1:1", Generation: 1}, false, false},
		{"a new spec Flux has not reconciled", governed(func(ks *kustomizev1.Kustomization, _ *Governed) { ks.Status.ObservedGeneration = 1 }), applied, true, false},
		{"the source serves a revision Flux is applying", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			g.SourceRevision = "main@sha1:2"
			ks.Status.Conditions[0].Status = metav1.ConditionUnknown
		}), applied, true, false},
		{"Flux failed the new revision: the applied one stands", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			g.SourceRevision = "main@sha1:2"
			ks.Status.Conditions[0].Status = metav1.ConditionFalse
		}), applied, false, true},
		{"suspended: Flux applies nothing new", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			g.SourceRevision, ks.Spec.Suspend = "main@sha1:2", true
		}), applied, false, true},
		{"source revision unknown", governed(func(_ *kustomizev1.Kustomization, g *Governed) { g.SourceRevision = "" }), applied, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(RollingOut(tt.g)).To(Equal(tt.rolling), "rolling out")
			g.Expect(IsCurrent(tt.g, tt.render)).To(Equal(tt.current), "current")
		})
	}
}

// shopRender is a render of main@sha1:0 of the desired package's shop
// tree at generation 2, and the key of its Service.
func shopRender(t *testing.T) (*desired.Render, desired.ObjectKey) {
	t.Helper()
	ks := &kustomizev1.Kustomization{}
	ks.Generation, ks.Spec.Path, ks.Spec.TargetNamespace = 2, "./overlays/prod", "shop"
	r, err := desired.Build(context.Background(), kustomize.BuildOptions{Root: "desired/testdata/shop", Kustomization: ks}, "main@sha1:0")
	if err != nil {
		t.Fatal(err)
	}
	return r, desired.ObjectKey{Kind: "Service", Namespace: "shop", Name: "checkout"}
}

// TestUsable: an older render is used for an object only when every
// revision Flux applied or applies renders it alike, with the same spec
// and substitutions (issue 20).
func TestUsable(t *testing.T) {
	older, service := shopRender(t)
	deployment := desired.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "checkout"}
	// main@sha1:1 changed the Deployment's file only.
	applied := &desired.Manifest{Revision: "main@sha1:1", Files: maps.Clone(older.Files.Files)}
	applied.Files["base/deployment.yaml"] = "d2"
	tests := []struct {
		name   string
		g      *Governed
		render *desired.Render
		key    desired.ObjectKey
		want   bool
	}{
		{"the current render", governed(nil), &desired.Render{Revision: "main@sha1:1", Generation: 2}, service, true},
		{"no render", governed(nil), nil, service, false},
		{"an older render, manifests unknown", governed(nil), older, service, false},
		{"an older render of an object the new revision leaves alone", governed(func(_ *kustomizev1.Kustomization, g *Governed) {
			g.Manifests = []*desired.Manifest{applied}
		}), older, service, true},
		{"an older render of an object the new revision changed", governed(func(_ *kustomizev1.Kustomization, g *Governed) {
			g.Manifests = []*desired.Manifest{applied}
		}), older, deployment, false},
		{"rolling out a revision whose tree is not known yet", governed(func(_ *kustomizev1.Kustomization, g *Governed) {
			g.SourceRevision, g.Manifests = "main@sha1:2", []*desired.Manifest{applied, nil}
		}), older, service, false},
		{"another spec", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			ks.Generation, ks.Status.ObservedGeneration, g.Manifests = 3, 3, []*desired.Manifest{applied}
		}), older, service, false},
		{"a spec Flux has not reconciled", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			ks.Status.ObservedGeneration, g.Manifests = 1, []*desired.Manifest{applied}
		}), older, service, false},
		{"other substitutions", governed(func(_ *kustomizev1.Kustomization, g *Governed) {
			g.Manifests = []*desired.Manifest{applied}
			g.SubstituteFrom = []kustomize.SubstituteSource{{Kind: "ConfigMap", Name: "vars", Data: map[string]string{"a": "b"}}}
		}), older, service, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := Snapshot{Gov: tt.g, Render: tt.render, Current: IsCurrent(tt.g, tt.render)}
			NewWithT(t).Expect(snap.Usable(tt.key)).To(Equal(tt.want))
		})
	}
}

// TestApplied: an object is Flux's to recreate when its inventory, in
// Flux's own ID format, holds it.
func TestApplied(t *testing.T) {
	obj := func(apiVersion, kind, ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	inventory := &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
		{ID: "apps_checkout-flags__ConfigMap", Version: "v1"},
		{ID: "apps_web_apps_Deployment", Version: "v1"},
		// kustomize-controller's inventory turns an RBAC name's ':' into "__".
		{ID: "_system__controller__web_rbac.authorization.k8s.io_ClusterRole", Version: "v1"},
	}}
	tests := []struct {
		name      string
		inventory *kustomizev1.ResourceInventory
		obj       *unstructured.Unstructured
		want      bool
	}{
		{"a core kind in the inventory", inventory, obj("v1", "ConfigMap", "apps", "checkout-flags"), true},
		{"a grouped kind in the inventory", inventory, obj("apps/v1", "Deployment", "apps", "web"), true},
		{"an RBAC name with colons", inventory, obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "system:controller:web"), true},
		{"another namespace", inventory, obj("v1", "ConfigMap", "other", "checkout-flags"), false},
		{"another group, same kind and name", inventory, obj("extensions/v1beta1", "Deployment", "apps", "web"), false},
		{"no inventory yet", nil, obj("v1", "ConfigMap", "apps", "checkout-flags"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := &kustomizev1.Kustomization{}
			ks.Status.Inventory = tt.inventory
			NewWithT(t).Expect(Applied(ks, tt.obj)).To(Equal(tt.want))
		})
	}
}
