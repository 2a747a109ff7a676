package drift

import (
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestDiffer checks the comparison on its own: keyed lists pair by key and
// point at live indices, other lists pair by index, numbers compare by
// value, and Git values come from the rendered object when it has them.
func TestDiffer(t *testing.T) {
	keys := listKeys{"/spec/containers": {"name"}}
	tests := []struct {
		name              string
		live, merged, src any
		want              []change
	}{
		{
			name:   "keyed list reordered live is no drift",
			live:   list(obj("name", "b", "v", "2"), obj("name", "a", "v", "1")),
			merged: list(obj("name", "a", "v", "1"), obj("name", "b", "v", "2")),
			want:   nil,
		},
		{
			name:   "keyed change points at the live index",
			live:   list(obj("name", "b", "v", "3"), obj("name", "a", "v", "1")),
			merged: list(obj("name", "a", "v", "1"), obj("name", "b", "v", "2")),
			want:   []change{{pointer: "/spec/containers/0/v", gitPointer: "/spec/containers/1/v", typ: refluxv1.ChangeUpdate, git: "2", live: "3", reverts: true}},
		},
		{
			name:   "element only Git has takes its Git index and value",
			live:   list(obj("name", "a", "v", "1")),
			merged: list(obj("name", "a", "v", "1"), obj("name", "b", "v", "2", "default", "x")),
			src:    list(obj("name", "b", "v", "2"), obj("name", "a", "v", "1")),
			want:   []change{{pointer: "/spec/containers/0", gitPointer: "/spec/containers/0", typ: refluxv1.ChangeRemove, git: obj("name", "b", "v", "2"), reverts: true}},
		},
		{
			name:   "numbers compare by value",
			live:   list(map[string]any{"name": "a", "n": int64(3)}),
			merged: list(map[string]any{"name": "a", "n": float64(3)}),
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := &differ{keys: keys}
			at := loc{live: "/spec/containers", git: "/spec/containers", abs: "/spec/containers"}
			src := tt.src
			if src == nil {
				src = tt.merged
			}
			d.walk(at, tt.live, tt.merged, src)
			g.Expect(d.out).To(Equal(tt.want))
		})
	}

	t.Run("unkeyed lists pair by index", func(t *testing.T) {
		g := NewWithT(t)
		d := &differ{keys: listKeys{}}
		d.walk(loc{live: "/args", git: "/args", abs: "/args"}, list("a", "x", "c"), list("a", "b"), nil)
		g.Expect(d.out).To(Equal([]change{
			{pointer: "/args/1", gitPointer: "/args/1", typ: refluxv1.ChangeUpdate, git: "b", live: "x", reverts: true},
			{pointer: "/args/2", gitPointer: "/args/2", typ: refluxv1.ChangeAdd, live: "c", reverts: true},
		}))
	})
}

func list(items ...any) []any { return items }

func obj(kv ...string) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
