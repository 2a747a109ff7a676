package drift

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

const podJSON = `{
  "metadata": {"annotations": {"example.com/a~b": "x"}},
  "spec": {
    "containers": [
      {"name": "sidecar", "ports": [{"containerPort": 9090, "protocol": "TCP"}]},
      {"name": "app", "env": [{"name": "A"}, {"name": "B", "value": "b"}],
       "ports": [{"containerPort": 8080, "protocol": "UDP"}, {"containerPort": 8080, "protocol": "TCP"}]}
    ],
    "finalizers": ["a", "b/c"],
    "args": ["x", "y"]
  }
}`

func TestPointer(t *testing.T) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(podJSON), &obj); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		path   fieldpath.Path
		want   string
		wantOK bool
	}{
		{name: "field", path: path("spec", "args"), want: "/spec/args", wantOK: true},
		{name: "escaped field", path: path("metadata", "annotations", "example.com/a~b"),
			want: "/metadata/annotations/example.com~1a~0b", wantOK: true},
		{name: "keyed element uses live index", path: path("spec", "containers", key("name", "app")),
			want: "/spec/containers/1", wantOK: true},
		{name: "nested keyed element", path: path("spec", "containers", key("name", "app"), "env", key("name", "B"), "value"),
			want: "/spec/containers/1/env/1/value", wantOK: true},
		{name: "compound key", path: path("spec", "containers", key("name", "app"), "ports",
			key("containerPort", 8080, "protocol", "TCP")), want: "/spec/containers/1/ports/1", wantOK: true},
		{name: "set element", path: path("spec", "finalizers", fieldpath.ValueElement(value.NewValueInterface("b/c"))),
			want: "/spec/finalizers/1", wantOK: true},
		{name: "indexed element", path: path("spec", "args", fieldpath.IndexElement(1)), want: "/spec/args/1", wantOK: true},
		{name: "empty path is the root", path: fieldpath.Path{}, want: "", wantOK: true},
		{name: "missing field", path: path("spec", "nope")},
		{name: "missing key", path: path("spec", "containers", key("name", "db"))},
		{name: "index out of range", path: path("spec", "args", fieldpath.IndexElement(2))},
		{name: "key into a map", path: path("spec", key("name", "app"))},
		{name: "field of a list", path: path("spec", "args", "x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := Pointer(obj, tt.path)
			g.Expect(ok).To(Equal(tt.wantOK))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// TestPointerFromManagedFields checks the conversion on a set parsed from
// the managedFields JSON the apiserver writes.
func TestPointerFromManagedFields(t *testing.T) {
	g := NewWithT(t)
	var obj map[string]any
	g.Expect(json.Unmarshal([]byte(podJSON), &obj)).To(Succeed())
	set := &fieldpath.Set{}
	g.Expect(set.FromJSON(strings.NewReader(`{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:env":{"k:{\"name\":\"B\"}":{".":{},"f:value":{}}}}}}}`))).To(Succeed())
	var got []string
	set.Iterate(func(p fieldpath.Path) {
		ptr, ok := Pointer(obj, p)
		g.Expect(ok).To(BeTrue(), "%s", p)
		got = append(got, ptr)
	})
	g.Expect(got).To(ConsistOf("/spec/containers/1/env/1", "/spec/containers/1/env/1/value"))
}

// FuzzPointer checks that any field name and key resolve to a pointer
// whose tokens unescape back to the field name and to the index of the
// keyed element, whatever characters they hold.
func FuzzPointer(f *testing.F) {
	f.Add("containers", "app", uint8(1))
	f.Add("a/b~c", "~1", uint8(0))
	f.Add("", "", uint8(3))
	f.Add("~01", "/", uint8(2))
	f.Fuzz(func(t *testing.T, field, name string, at uint8) {
		n := int(at%4) + 1
		idx := int(at) % n
		list := make([]any, n)
		for i := range list {
			list[i] = map[string]any{"name": "other-" + strconv.Itoa(i), "v": int64(i)}
		}
		list[idx] = map[string]any{"name": name, "v": int64(idx)}
		obj := map[string]any{"spec": map[string]any{field: list}}

		ptr, ok := Pointer(obj, path("spec", field, key("name", name)))
		if strings.HasPrefix(name, "other-") {
			return // may legitimately match an earlier element
		}
		if !ok {
			t.Fatalf("no pointer for %q/%q", field, name)
		}
		tokens := strings.Split(ptr, "/")
		if len(tokens) != 4 || tokens[0] != "" || jsonptr.Unescape(tokens[1]) != "spec" {
			t.Fatalf("malformed pointer %q", ptr)
		}
		if jsonptr.Unescape(tokens[2]) != field {
			t.Fatalf("token %q unescapes to %q, want %q", tokens[2], jsonptr.Unescape(tokens[2]), field)
		}
		if tokens[3] != strconv.Itoa(idx) {
			t.Fatalf("index %s, want %d", tokens[3], idx)
		}
		// The pointer resolves, by RFC 6901 rules, to the keyed element.
		if got := lookup(obj, tokens[1:]); got == nil || got.(map[string]any)["name"] != name {
			t.Fatalf("%q resolves to %v", ptr, got)
		}
	})
}

func path(parts ...any) fieldpath.Path {
	p, err := fieldpath.MakePath(parts...)
	if err != nil {
		panic(err)
	}
	return p
}

func key(kv ...any) fieldpath.PathElement {
	return fieldpath.KeyElementByFields(kv...)
}

func lookup(v any, tokens []string) any {
	for _, tok := range tokens {
		switch t := v.(type) {
		case map[string]any:
			v = t[jsonptr.Unescape(tok)]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	return v
}
