package edit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

var fuzzTrees = []struct{ tree, flux string }{
	{"plain-dir", ""},
	{"smp-patch-files", "flux-kustomization.yaml"},
	{"configmap-generator", "flux-kustomization.yaml"},
	{"multi-doc", ""},
	{"postbuild-substitution", "flux-kustomization.yaml"},
	{"inline-patches-selectors", ""},
}

// FuzzEdit edits a random mapped field of a corpus tree to a random value.
// Any plan Plan returns must re-render with exactly that change, and every
// file it writes must still parse; refusing is always allowed.
func FuzzEdit(f *testing.F) {
	f.Add(uint8(0), uint16(3), "4")
	f.Add(uint8(1), uint16(10), "db.other.svc")
	f.Add(uint8(2), uint16(2), "it's \"quoted\"")
	f.Add(uint8(3), uint16(7), "redis:7.4")
	f.Add(uint8(4), uint16(12), "v: 1 # not a comment")
	f.Add(uint8(5), uint16(20), "99")
	f.Fuzz(func(t *testing.T, treeN uint8, fieldN uint16, s string) {
		tt := fuzzTrees[int(treeN)%len(fuzzTrees)]
		work := t.TempDir()
		if err := kustomize.CopyTree(path.Join("..", "testdata", tt.tree), work); err != nil {
			t.Fatal(err)
		}
		opts := buildOptions(t, caseSpec{Kustomization: tt.flux}, work)
		idx, _, err := origin.Build(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		ref, field, ok := pickField(idx, int(fieldN))
		if !ok {
			return
		}
		value := fuzzValue(field.Value, s)
		res, err := Plan(context.Background(), Options{Build: opts}, Change{Object: ref, Pointer: field.Pointer, Value: value})
		if err != nil {
			return // refusing is always allowed
		}
		checkPlan(t, opts, res, ref, field.Pointer, value)
	})
}

func pickField(idx *origin.Index, n int) (origin.ObjectRef, origin.Field, bool) {
	var refs []origin.ObjectRef
	var fields []origin.Field
	for _, ref := range idx.Objects() {
		fs, _ := idx.Fields(ref)
		for _, f := range fs {
			if f.Refused == "" {
				refs, fields = append(refs, ref), append(fields, f)
			}
		}
	}
	if len(fields) == 0 {
		return origin.ObjectRef{}, origin.Field{}, false
	}
	return refs[n%len(fields)], fields[n%len(fields)], true
}

// fuzzValue keeps the field's type: numbers and booleans are derived from s.
func fuzzValue(old interface{}, s string) interface{} {
	switch o := old.(type) {
	case int64:
		return o + int64(len(s)) + 1
	case bool:
		return !o
	}
	return s
}

func checkPlan(t *testing.T, opts kustomize.BuildOptions, res *Result, ref origin.ObjectRef, ptr string, value interface{}) {
	t.Helper()
	diffs := rerender(t, opts, res)
	if len(diffs) != 1 || diffs[0].Pointer != ptr || !jsonptr.Equal(diffs[0].After, value) {
		t.Fatalf("edit of %s %s to %#v moved %v", ref, ptr, value, diffs)
	}
}

// rerender writes res to the tree at opts.Root, checks that every YAML
// file it wrote still parses, and returns what moved in the render.
func rerender(t *testing.T, opts kustomize.BuildOptions, res *Result) []FieldDiff {
	t.Helper()
	before, err := kustomize.Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Write(opts.Root); err != nil {
		t.Fatal(err)
	}
	for file, data := range res.Files {
		if strings.HasSuffix(file, ".yaml") || strings.HasSuffix(file, ".yml") {
			dec := yaml.NewDecoder(bytes.NewReader(data))
			for {
				var n yaml.Node
				if err := dec.Decode(&n); err != nil {
					if !errors.Is(err, os.ErrNotExist) && err.Error() != "EOF" {
						t.Fatalf("%s no longer parses: %v\n%s", file, err, data)
					}
					break
				}
			}
		}
	}
	if opts.KustomizationFile != "" {
		if opts.Kustomization, err = kustomize.LoadKustomization(path.Join(opts.Root, opts.KustomizationFile)); err != nil {
			t.Fatal(err)
		}
	}
	after, err := kustomize.Build(context.Background(), opts)
	if err != nil {
		t.Fatalf("plan breaks the build: %v", err)
	}
	return Diff(before.Objects, after.Objects)
}

// FuzzPlanSet edits three random mapped fields of a corpus tree at once,
// planned against one render. Whatever PlanSet accepts must re-render
// with exactly its planned changes: this is what checks that positions
// move along correctly when several changes land in one file.
func FuzzPlanSet(f *testing.F) {
	f.Add(uint8(0), uint16(3), uint16(4), uint16(9), "4")
	f.Add(uint8(1), uint16(10), uint16(2), uint16(11), "db.other.svc")
	f.Add(uint8(2), uint16(2), uint16(5), uint16(6), "it's \"quoted\"")
	f.Add(uint8(3), uint16(7), uint16(1), uint16(12), "redis:7.4")
	f.Add(uint8(4), uint16(12), uint16(13), uint16(3), "v: 1 # not a comment")
	f.Add(uint8(5), uint16(20), uint16(21), uint16(22), "99")
	f.Fuzz(func(t *testing.T, treeN uint8, a, b, c uint16, s string) {
		tt := fuzzTrees[int(treeN)%len(fuzzTrees)]
		work := t.TempDir()
		if err := kustomize.CopyTree(path.Join("..", "testdata", tt.tree), work); err != nil {
			t.Fatal(err)
		}
		opts := Options{Build: buildOptions(t, caseSpec{Kustomization: tt.flux}, work)}
		before, err := NewBefore(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		var changes []Change
		for i, n := range []uint16{a, b, c} {
			ref, field, ok := pickField(before.Index, int(n))
			if !ok {
				return
			}
			// Each change gets its own value, so the render tells them apart.
			changes = append(changes, Change{Object: ref, Pointer: field.Pointer, Value: fuzzValue(field.Value, s+strings.Repeat("x", i))})
		}
		res, err := PlanSet(context.Background(), opts, before, changes)
		if err != nil {
			return // refusing is always allowed
		}
		want := map[string]interface{}{}
		for _, p := range res.Planned {
			want[fieldKey(p.Change.Object, p.Change.Pointer)] = p.Change.Value
		}
		moved := rerender(t, opts.Build, &res.Result)
		if len(moved) != len(want) {
			t.Fatalf("planned %v, moved %v", res.Planned, moved)
		}
		for _, d := range moved {
			if v, ok := want[d.Object+" "+d.Pointer]; !ok || !jsonptr.Equal(d.After, v) {
				t.Fatalf("planned %v, moved %v", res.Planned, moved)
			}
		}
	})
}
