package edit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// verify renders the tree before and after the change, on a copy, and
// accepts the plan only when the single intended leaf moved to the value.
func verify(ctx context.Context, opts kustomize.BuildOptions, root string, before *kustomize.Result, files map[string][]byte, ref origin.ObjectRef, ch Change) error {
	work, err := os.MkdirTemp("", "reflux-edit-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := kustomize.CopyTree(root, work); err != nil {
		return err
	}
	if err := (&Result{Files: files}).Write(work); err != nil {
		return err
	}
	after := opts
	after.Root = work
	if filepath.IsAbs(opts.KustomizationFile) {
		if rel, err := filepath.Rel(root, opts.KustomizationFile); err == nil {
			after.KustomizationFile = filepath.Join(work, rel)
		}
	}
	if err := reloadKustomization(&after, work, files); err != nil {
		return err
	}
	res, err := kustomize.Build(ctx, after)
	if err != nil {
		return fmt.Errorf("edit breaks the build: %w", err)
	}
	diffs := Diff(before.Objects, res.Objects)
	key := objectKey(ref.Kind, ref.Namespace, unhash(ref.Kind, ref.Name))
	if len(diffs) == 1 && diffs[0].Object == key && diffs[0].Pointer == ch.Pointer && jsonptr.Equal(diffs[0].After, ch.Value) {
		return nil
	}
	return &VerifyError{Moved: diffs}
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
				out = append(out, FieldDiff{Object: obj, Pointer: ptr, Before: va, After: fb[ptr]})
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
	ks, err := kustomize.LoadKustomization(filepath.Join(work, rel))
	if err != nil {
		return fmt.Errorf("edit breaks the Flux Kustomization: %w", err)
	}
	opts.Kustomization = ks
	return nil
}
