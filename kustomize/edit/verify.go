package edit

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// verify writes the draft to a scratch copy of the tree, builds the copy
// once and accepts the draft only when the render moved exactly the
// planned fields to their values.
func (d *draft) verify(ctx context.Context, planned []Planned) error {
	work, err := os.MkdirTemp("", "reflux-edit-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := kustomize.CopyTree(d.root, work); err != nil {
		return err
	}
	if err := (&Result{Files: d.files}).Write(work); err != nil {
		return err
	}
	after := rebase(d.opts.Build, d.root, work)
	if err := reloadKustomization(&after, work, d.files); err != nil {
		return err
	}
	res, err := d.opts.render(ctx, after)
	if err != nil {
		return fmt.Errorf("edit breaks the build: %w", err)
	}
	want := map[string]Change{}
	held := map[string]interface{}{}
	before := &Before{Result: d.res, Index: d.idx}
	// A removal is checked against the render before with the removal
	// made: removing a list element moves every later element up, which
	// a leaf-by-leaf comparison with the render before would take for
	// changes to all of them.
	expected := withRemovals(d.res.Objects, planned, d.idx)
	for _, p := range planned {
		if p.Change.Remove {
			continue
		}
		ref, err := d.idx.Resolve(p.Change.Object)
		if err != nil {
			return err
		}
		key := fieldKey(ref, p.Change.Pointer)
		want[key] = p.Change
		if held[key], _, err = before.Value(Change{Object: ref, Pointer: p.Change.Pointer}); err != nil {
			return err
		}
	}
	return expectExactly(Diff(expected, res.Objects), want, held)
}

// withRemovals returns objs with every planned removal made, copying only
// the objects a removal changes.
func withRemovals(objs []*unstructured.Unstructured, planned []Planned, idx *origin.Index) []*unstructured.Unstructured {
	out := objs
	copied := false
	for _, p := range planned {
		if !p.Change.Remove {
			continue
		}
		ref, err := idx.Resolve(p.Change.Object)
		if err != nil {
			continue // planned changes resolved when they were planned
		}
		if !copied {
			out, copied = slices.Clone(objs), true
		}
		for i, u := range out {
			if origin.RefOf(u) == ref {
				c := u.DeepCopy()
				jsonptr.Remove(c.Object, p.Change.Pointer)
				out[i] = c
			}
		}
	}
	return out
}

// expectExactly accepts the diff only when it is the wanted changes, keyed
// by fieldKey; held is what each wanted field held before, for the error.
func expectExactly(diffs []FieldDiff, want map[string]Change, held map[string]interface{}) error {
	ok := len(diffs) == len(want)
	got := map[string]FieldDiff{}
	for _, d := range diffs {
		got[d.Object+" "+d.Pointer] = d
		if ch, wanted := want[d.Object+" "+d.Pointer]; !wanted || !reached(d, ch) {
			ok = false
		}
	}
	if ok {
		return nil
	}
	ve := &VerifyError{Moved: diffs}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		ch := want[key]
		now := held[key]
		if d, moved := got[key]; moved {
			if reached(d, ch) {
				continue
			}
			now = d.After
		}
		obj, ptr, _ := strings.Cut(key, " ")
		ve.Missed = append(ve.Missed, FieldDiff{Object: obj, Pointer: ptr, Before: now, After: ch.Value})
	}
	return ve
}

// reached reports whether a leaf that moved is where ch asked it to be.
func reached(d FieldDiff, ch Change) bool {
	if d.Gone {
		return false
	}
	if ch.Within != "" {
		v, ok, err := within(d.After, ch.Within)
		return err == nil && ok && jsonptr.Equal(v, ch.Value)
	}
	return jsonptr.Equal(d.After, ch.Value)
}

// hashSuffix matches the suffix kustomize appends to generated names.
var hashSuffix = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2456789]{10}$`)

func unhash(kind, name string) string {
	if kind == "ConfigMap" || kind == "Secret" {
		return hashSuffix.ReplaceAllString(name, "")
	}
	return name
}

func objectKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// Diff lists the leaves that differ between two renders. Generated names
// are compared without their hash suffix, which any data change moves.
func Diff(before, after []*unstructured.Unstructured) []FieldDiff {
	a, b := flattenAll(before), flattenAll(after)
	var out []FieldDiff
	for obj, fa := range a {
		fb := b[obj]
		for ptr, va := range fa {
			if vb, ok := fb[ptr]; !ok || !jsonptr.Equal(va, vb) {
				out = append(out, FieldDiff{Object: obj, Pointer: ptr, Before: va, After: fb[ptr], Gone: !ok})
			}
		}
		for ptr, vb := range fb {
			if _, ok := fa[ptr]; !ok {
				out = append(out, FieldDiff{Object: obj, Pointer: ptr, After: vb})
			}
		}
	}
	for obj, fb := range b {
		if _, ok := a[obj]; !ok {
			for ptr, vb := range fb {
				out = append(out, FieldDiff{Object: obj, Pointer: ptr, After: vb})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Pointer < out[j].Pointer
	})
	return out
}

func flattenAll(objs []*unstructured.Unstructured) map[string]map[string]interface{} {
	hashed := map[string]string{}
	for _, o := range objs {
		if n := unhash(o.GetKind(), o.GetName()); n != o.GetName() {
			hashed[o.GetName()] = n
		}
	}
	out := map[string]map[string]interface{}{}
	for _, o := range objs {
		fields := map[string]interface{}{}
		flatten("", o.Object, hashed, fields)
		out[objectKey(o.GetKind(), o.GetNamespace(), unhash(o.GetKind(), o.GetName()))] = fields
	}
	return out
}

func flatten(ptr string, v interface{}, hashed map[string]string, out map[string]interface{}) {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, c := range t {
			flatten(jsonptr.Append(ptr, k), c, hashed, out)
		}
	case []interface{}:
		for i, c := range t {
			flatten(jsonptr.Append(ptr, strconv.Itoa(i)), c, hashed, out)
		}
	case string:
		if n, ok := hashed[t]; ok {
			t = n
		}
		out[ptr] = t
	default:
		out[ptr] = t
	}
}

// reloadKustomization re-reads the Flux Kustomization when the plan
// changed the file that declares it (spec images, patches, variables).
func reloadKustomization(opts *kustomize.BuildOptions, work string, files map[string][]byte) error {
	if opts.KustomizationFile == "" {
		return nil
	}
	rel := opts.KustomizationFile
	if filepath.IsAbs(rel) {
		var err error
		if rel, err = filepath.Rel(work, rel); err != nil {
			return nil
		}
	}
	if _, changed := files[filepath.ToSlash(rel)]; !changed {
		return nil
	}
	// The file may hold several Kustomizations: re-read the one in use.
	file := filepath.Join(work, rel)
	ks, err := kustomize.LoadKustomization(file)
	if old := opts.Kustomization; old != nil && old.Name != "" {
		ks, err = kustomize.SelectKustomization(file, old.Namespace+"/"+old.Name)
	}
	if err != nil {
		return fmt.Errorf("edit breaks the Flux Kustomization: %w", err)
	}
	opts.Kustomization = ks
	return nil
}
