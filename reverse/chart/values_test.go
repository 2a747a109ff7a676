package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

func steps(parts ...any) []step {
	var out []step
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			out = append(out, step{name: v, index: -1})
		case int:
			out = append(out, step{index: v})
		}
	}
	return out
}

func TestKeyNotation(t *testing.T) {
	tests := []struct {
		steps   []step
		path    string
		pointer string
	}{
		{steps("replicaCount"), "replicaCount", "/replicaCount"},
		{steps("resources", "limits", "memory"), "resources.limits.memory", "/resources/limits/memory"},
		{steps("env", 0, "value"), "env[0].value", "/env/0/value"},
		{steps("args", 2), "args[2]", "/args/2"},
		{steps("matrix", 1, 0), "matrix[1][0]", "/matrix/1/0"},
		{steps("podAnnotations", "prometheus.io/port"), `podAnnotations["prometheus.io/port"]`, "/podAnnotations/prometheus.io~1port"},
		{steps("extra-labels", "team_name"), "extra-labels.team_name", "/extra-labels/team_name"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(keyPath(tt.steps)).To(Equal(tt.path))
			g.Expect(keyPointer(tt.steps)).To(Equal(tt.pointer))
		})
	}
}

func TestLeaves(t *testing.T) {
	g := NewWithT(t)
	full := map[string]any{
		"replicaCount": float64(3),
		"image":        map[string]any{"repository": "nginx", "tag": ""},
		"env":          []any{map[string]any{"name": "A", "value": "1"}},
		"empty":        map[string]any{},
		"none":         nil,
		"cache":        map[string]any{"global": map[string]any{"x": "copied"}, "size": "1Gi"},
	}
	user := map[string]any{"replicaCount": float64(3), "env": []any{map[string]any{"name": "A", "value": "1"}}}
	skip := func(s []step) bool { return len(s) == 2 && s[0].name == "cache" && s[1].name == "global" }

	var got []string
	var inUser []string
	for _, l := range leaves(full, user, skip) {
		got = append(got, keyPath(l.steps))
		if l.inUser {
			inUser = append(inUser, keyPath(l.steps))
		}
	}
	g.Expect(got).To(Equal([]string{"cache.size", "env[0].name", "env[0].value", "image.repository", "image.tag", "replicaCount"}))
	g.Expect(inUser).To(Equal([]string{"env[0].name", "env[0].value", "replicaCount"}))
}

func TestPut(t *testing.T) {
	full := func() map[string]any {
		return map[string]any{
			"image": map[string]any{"repository": "nginx", "tag": "1.0"},
			"env":   []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": "2"}},
		}
	}
	tests := []struct {
		name  string
		user  map[string]any
		steps []step
		want  map[string]any
	}{
		{name: "a key only the chart sets makes the maps to hold it",
			user: map[string]any{}, steps: steps("image", "tag"),
			want: map[string]any{"image": map[string]any{"tag": "X"}}},
		{name: "a key beside the release's own",
			user: map[string]any{"image": map[string]any{"repository": "mine"}}, steps: steps("image", "tag"),
			want: map[string]any{"image": map[string]any{"repository": "mine", "tag": "X"}}},
		{name: "an element of a list the chart sets copies the list whole",
			user: map[string]any{}, steps: steps("env", 1, "value"),
			want: map[string]any{"env": []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": "X"}}}},
		{name: "an element of the release's list",
			user:  map[string]any{"env": []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": "2"}}},
			steps: steps("env", 0, "name"),
			want:  map[string]any{"env": []any{map[string]any{"name": "X", "value": "1"}, map[string]any{"name": "B", "value": "2"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := full()
			g.Expect(put(tt.user, f, tt.steps, "X")).To(Succeed())
			g.Expect(tt.user).To(Equal(tt.want))
			g.Expect(f).To(Equal(full()), "the coalesced values are never changed")
		})
	}
}

func TestPutRefusesAMissingElement(t *testing.T) {
	g := NewWithT(t)
	err := put(map[string]any{}, map[string]any{"env": []any{}}, steps("env", 3, "value"), "X")
	g.Expect(err).To(MatchError(ContainSubstring("no list element [3]")))
}

func TestCopyTree(t *testing.T) {
	g := NewWithT(t)
	orig := map[string]any{"a": []any{map[string]any{"b": "c"}}}
	cp := copyTree(orig).(map[string]any)
	cp["a"].([]any)[0].(map[string]any)["b"] = "changed"
	g.Expect(orig).To(Equal(map[string]any{"a": []any{map[string]any{"b": "c"}}}))
}
