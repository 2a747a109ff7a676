package jsonptr_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

func TestWalkLeaves(t *testing.T) {
	for _, c := range []struct {
		name string
		doc  any
		want map[string]any
	}{
		{"a scalar is its own leaf", "x", map[string]any{"/r": "x"}},
		{"nested maps and lists", map[string]any{"a": map[string]any{"b": int64(1)}, "l": []any{"x", map[string]any{"c": true}}},
			map[string]any{"/r/a/b": int64(1), "/r/l/0": "x", "/r/l/1/c": true}},
		{"empty maps and lists are leaves", map[string]any{"m": map[string]any{}, "l": []any{}},
			map[string]any{"/r/m": map[string]any{}, "/r/l": []any{}}},
		{"keys are escaped", map[string]any{"a/b~c": nil}, map[string]any{"/r/a~1b~0c": nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			got := map[string]any{}
			jsonptr.WalkLeaves(c.doc, "/r", func(p string, v any) {
				g.Expect(jsonptr.IsLeaf(v)).To(BeTrue(), "%s is a leaf", p)
				got[p] = v
			})
			g.Expect(got).To(Equal(c.want))
		})
	}
	g := NewWithT(t)
	g.Expect(jsonptr.IsLeaf(map[string]any{"a": 1})).To(BeFalse())
	g.Expect(jsonptr.IsLeaf([]any{1})).To(BeFalse())
}
