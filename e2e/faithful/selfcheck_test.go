package faithful

import (
	"context"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestComparisonCanFail proves the check is not vacuous: a copy of a real
// render, changed the way a reflux bug would change it, is compared with
// the object Flux really applied, and the comparison must name the field.
func TestComparisonCanFail(t *testing.T) {
	tests := []struct {
		name        string
		caseName    string
		kind, obj   string
		mutate      func(*unstructured.Unstructured)
		wantPointer string
	}{
		{"changed scalar", "base-overlays-prod", "Deployment", "podinfo",
			set(int64(4), "spec", "replicas"), "/spec/replicas"},
		// A zero reflux renders is checked even though the normalisation's
		// own zeros are not.
		{"rendered zero", "base-overlays-prod", "Deployment", "podinfo",
			set(int64(0), "spec", "replicas"), "/spec/replicas"},
		{"changed quantity", "base-overlays-prod", "Deployment", "podinfo",
			setContainer("resources", map[string]any{"limits": map[string]any{"cpu": "2", "memory": "512Mi"}}),
			"/spec/template/spec/containers/0/resources/limits/cpu"},
		{"field Flux never applied", "base-overlays-prod", "Deployment", "podinfo",
			set("yes", "metadata", "labels", "faithful.reflux.dev/absent"),
			"/metadata/labels/faithful.reflux.dev~1absent"},
		{"map Flux never applied", "base-overlays-prod", "Deployment", "podinfo",
			set("yes", "metadata", "annotations", "faithful.reflux.dev/absent"),
			"/metadata/annotations"},
		{"extra list item", "base-overlays-prod", "Deployment", "podinfo",
			appendContainer(map[string]any{"name": "sidecar", "image": "busybox"}),
			"/spec/template/spec/containers"},
		{"secret value, compared decoded", "secret-generator", "Secret", "db-credentials",
			set("aHVudGVyMg==", "data", "password"), "/data/password"},
		{"inline stringData becomes data", "secret-generator", "Secret", "db-credentials",
			set("hunter2", "stringData", "password"), "/data/password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, ks := settledCase(t, tt.caseName)
			rendered := find(c.Render.Objects, tt.kind, tt.obj)
			g.Expect(rendered).NotTo(BeNil())
			live, err := getLive(context.Background(), rendered)
			g.Expect(err).NotTo(HaveOccurred())

			honest, err := expected(rendered, ks)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(compare(honest, live).Mismatches).To(BeEmpty(), "the unchanged render must match")

			broken := rendered.DeepCopy()
			tt.mutate(broken)
			want, err := expected(broken, ks)
			g.Expect(err).NotTo(HaveOccurred())
			got := compare(want, live).Mismatches
			g.Expect(got).To(HaveLen(1), "%v", got)
			g.Expect(got[0].Pointer).To(Equal(tt.wantPointer))
			t.Log(got[0])
		})
	}
}

// TestOwnerLabelsAreChecked: the owner labels are part of what is
// compared, so a render stamped for another Kustomization fails.
func TestOwnerLabelsAreChecked(t *testing.T) {
	g := NewWithT(t)
	c, ks := settledCase(t, "base-overlays-prod")
	rendered := find(c.Render.Objects, "Deployment", "podinfo")
	live, err := getLive(context.Background(), rendered)
	g.Expect(err).NotTo(HaveOccurred())
	other := ks.DeepCopy()
	other.Name = "someone-else"
	want, err := expected(rendered, other)
	g.Expect(err).NotTo(HaveOccurred())
	got := compare(want, live).Mismatches
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].Pointer).To(Equal("/metadata/labels/kustomize.toolkit.fluxcd.io~1name"))
}

// TestInventoryCheckCanFail: a render with an object missing, or one too
// many, does not match Flux's inventory.
func TestInventoryCheckCanFail(t *testing.T) {
	g := NewWithT(t)
	c, ks := settledCase(t, "name-affix-refs")
	objs := c.Render.Objects
	g.Expect(len(objs)).To(BeNumerically(">", 1))
	g.Expect(inventoryIDs(ks)).To(Equal(renderedIDs(objs)))
	g.Expect(inventoryIDs(ks)).NotTo(Equal(renderedIDs(objs[1:])))
	renamed := objs[0].DeepCopy()
	renamed.SetName(renamed.GetName() + "-extra")
	g.Expect(inventoryIDs(ks)).NotTo(Equal(renderedIDs(append([]*unstructured.Unstructured{renamed}, objs...))))
}

// settledCase returns the named case once Flux has applied it.
func settledCase(t *testing.T, name string) (*fluxCase, *kustomizev1.Kustomization) {
	t.Helper()
	for _, c := range cases {
		if c.Name == name {
			ks, err := settled(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			return c, ks
		}
	}
	t.Fatalf("no corpus case %s", name)
	return nil, nil
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func set(value any, fields ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(u.Object, value, fields...); err != nil {
			panic(err)
		}
	}
}

func containers(u *unstructured.Unstructured) []any {
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	return cs
}

func setContainer(field string, value any) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		cs := containers(u)
		cs[0].(map[string]any)[field] = value
		set(cs, "spec", "template", "spec", "containers")(u)
	}
}

func appendContainer(c map[string]any) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		set(append(containers(u), c), "spec", "template", "spec", "containers")(u)
	}
}
