package chart

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCompare(t *testing.T) {
	containers := func(names ...string) map[string]any {
		var l []any
		for _, n := range names {
			l = append(l, map[string]any{"name": n, "image": n + ":1"})
		}
		return map[string]any{"spec": map[string]any{"replicas": int64(3), "containers": l}}
	}
	tests := []struct {
		name  string
		base  map[string]any
		probe map[string]any
		want  map[string]change
	}{
		{name: "unchanged", base: containers("app"), probe: containers("app"), want: map[string]change{}},
		{name: "a value changed; 3 and 3.0 are the same",
			base:  containers("app"),
			probe: map[string]any{"spec": map[string]any{"replicas": float64(4), "containers": []any{map[string]any{"name": "app", "image": "app:1"}}}},
			want:  map[string]change{"/spec/replicas": {kind: changedValue, value: float64(4)}}},
		{name: "a field removed",
			base:  containers("app"),
			probe: map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}}}},
			want:  map[string]change{"/spec/replicas": {kind: changedGone}}},
		{name: "an element removed after the field leaves it alone",
			base: containers("app", "sidecar"), probe: containers("app"),
			want: map[string]change{
				"/spec/containers/1/name":  {kind: changedGone},
				"/spec/containers/1/image": {kind: changedGone},
			}},
		{name: "an element added before the field shifts it",
			base: containers("app"), probe: containers("init", "app"),
			want: map[string]change{
				"/spec/containers/0/name":  {kind: changedShifted, value: "init"},
				"/spec/containers/0/image": {kind: changedShifted, value: "init:1"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := map[string]change{}
			compare(tt.base, tt.probe, "", false, got)
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func rendering(objs ...Object) *Rendering {
	r := &Rendering{byKey: map[ObjectKey]int{}}
	for i, o := range objs {
		r.byKey[o.Key] = i
		r.Objects = append(r.Objects, o)
	}
	return r
}

func cm(name, template string, index int, data string) Object {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name}, "data": map[string]any{"k": data}}}
	return Object{Key: ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod", Name: name},
		Template: template, Index: index, Object: u}
}

func TestDiffMatchesRenamedObjects(t *testing.T) {
	g := NewWithT(t)
	base := rendering(cm("shop-a", "templates/a.yaml", 0, "v"), cm("shop-b", "templates/b.yaml", 0, "v"))
	// A probe of nameOverride renames a, and drops b.
	probe := rendering(cm("x-a", "templates/a.yaml", 0, "v"))

	got := diff(base, probe)
	g.Expect(got).To(HaveLen(2))
	g.Expect(got[0].gone).To(BeFalse(), "renamed, not gone")
	g.Expect(got[0].fields).To(Equal(map[string]change{"/metadata/name": {kind: changedValue, value: "x-a"}}))
	g.Expect(got[1].gone).To(BeTrue())
}

func TestDiffDoesNotMatchAnObjectTwice(t *testing.T) {
	g := NewWithT(t)
	// Both baseline objects came from one template; the probe drops the
	// first, and the second, still under its own name, must not stand in
	// for it.
	base := rendering(cm("one", "templates/a.yaml", 0, "v"), cm("two", "templates/a.yaml", 1, "v"))
	probe := rendering(cm("two", "templates/a.yaml", 0, "v"))

	got := diff(base, probe)
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].gone).To(BeTrue())
}
