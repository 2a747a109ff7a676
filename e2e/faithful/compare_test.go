package faithful

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/ssa/normalize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Owner labels kustomize-controller stamps on every object it applies
// (ssa.ResourceManager.SetOwnerLabels with its API group).
const (
	ownerNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	ownerNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// mismatch is one leaf of the expected object the live object does not
// carry with the same value.
type mismatch struct {
	// Pointer is the JSON pointer of the leaf.
	Pointer string
	// Want is reflux's value, Got the live one; Got is nil when missing.
	Want, Got any
	// Missing reports that the live object has no such field.
	Missing bool
}

func (m mismatch) String() string {
	if m.Missing {
		return fmt.Sprintf("%s: reflux %#v, Flux applied nothing", m.Pointer, m.Want)
	}
	w, wok := m.Want.([]any)
	g, gok := m.Got.([]any)
	if wok && gok {
		return fmt.Sprintf("%s: reflux %d items, Flux %d", m.Pointer, len(w), len(g))
	}
	return fmt.Sprintf("%s: reflux %#v, Flux %#v", m.Pointer, m.Want, m.Got)
}

// expected is what kustomize-controller sends for a rendered object: the
// object normalised as its apply step does (a typed round trip, so ints,
// quantities and intstr take the apiserver's form, Secret stringData
// becomes data, Service and container ports get protocol TCP, status
// goes) plus its owner labels. The round trip also writes the zero value
// of every non-omitempty field (a Service port's targetPort: 0, which the
// apiserver then defaults to the port); such zero values reflux never
// rendered are dropped, so only what reflux rendered, or Flux itself
// added with a value, is checked.
func expected(rendered *unstructured.Unstructured, ks *kustomizev1.Kustomization) (*unstructured.Unstructured, error) {
	obj := rendered.DeepCopy()
	if err := normalize.UnstructuredList([]*unstructured.Unstructured{obj}); err != nil {
		return nil, err
	}
	pruned, _ := dropAddedZeros(obj.Object, rendered.Object, true)
	obj.Object = pruned.(map[string]any)
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ownerNameLabel] = ks.GetName()
	labels[ownerNamespaceLabel] = ks.GetNamespace()
	obj.SetLabels(labels)
	return obj, nil
}

// dropAddedZeros returns norm without the zero values (and the maps and
// lists left empty) at pointers raw does not have; inRaw tells whether raw
// has the pointer of norm itself. List items are kept, emptied, so the
// indexes still line up with the live list.
func dropAddedZeros(norm, raw any, inRaw bool) (any, bool) {
	switch n := norm.(type) {
	case map[string]any:
		r, _ := raw.(map[string]any)
		out := make(map[string]any, len(n))
		for k, v := range n {
			rv, ok := r[k]
			if pv, keep := dropAddedZeros(v, rv, ok); keep {
				out[k] = pv
			}
		}
		return out, inRaw || len(out) > 0
	case []any:
		r, _ := raw.([]any)
		out := make([]any, len(n))
		for i, v := range n {
			var rv any
			if i < len(r) {
				rv = r[i]
			}
			out[i], _ = dropAddedZeros(v, rv, i < len(r))
		}
		return out, inRaw || len(out) > 0
	default:
		return norm, inRaw || (norm != nil && !reflect.ValueOf(norm).IsZero())
	}
}

// compare reports every leaf of want that live lacks or holds with another
// value. Fields only live has (server defaults, managedFields, status) are
// not looked at; lists must have the same length, since neither the
// apiserver nor Flux adds items to a list the render sets. Secret data is
// compared decoded, so a mismatch reads as the value, not its base64.
func compare(want, live *unstructured.Unstructured) comparison {
	w, l := want.Object, live.Object
	if want.GetKind() == "Secret" && want.GroupVersionKind().Group == "" {
		w, l = decodeSecretData(w), decodeSecretData(l)
	}
	var c comparison
	c.walk("", w, l)
	sort.Slice(c.Mismatches, func(i, j int) bool { return c.Mismatches[i].Pointer < c.Mismatches[j].Pointer })
	return c
}

// comparison is the outcome of compare.
type comparison struct {
	// Mismatches are the leaves live lacks or holds otherwise, by pointer.
	Mismatches []mismatch
	// Leaves counts the leaves looked at, so a test can show the check
	// was not vacuous.
	Leaves int
}

// walk descends want and live together.
func (c *comparison) walk(ptr string, want, live any) {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			c.add(mismatch{Pointer: ptr, Want: want, Got: live})
			return
		}
		if len(w) == 0 {
			c.Leaves++ // an empty map, such as emptyDir: {}, is a leaf
		}
		for k, wv := range w {
			// A null in an apply request sets nothing (creationTimestamp).
			if wv == nil {
				continue
			}
			lv, ok := l[k]
			if !ok {
				c.add(mismatch{Pointer: ptr + "/" + escape(k), Want: wv, Missing: true})
				continue
			}
			c.walk(ptr+"/"+escape(k), wv, lv)
		}
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			c.add(mismatch{Pointer: ptr, Want: want, Got: live})
			return
		}
		if len(w) == 0 {
			c.Leaves++
		}
		for i := range w {
			c.walk(ptr+"/"+strconv.Itoa(i), w[i], l[i])
		}
	default:
		c.Leaves++
		if !leafEqual(want, live) {
			c.add(mismatch{Pointer: ptr, Want: want, Got: live})
		}
	}
}

func (c *comparison) add(m mismatch) {
	c.Leaves++
	c.Mismatches = append(c.Mismatches, m)
}

// leafEqual compares scalars, treating numbers by value: a render read from
// YAML may hold 1.0 where the apiserver returns 1.
func leafEqual(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// decodeSecretData returns obj with data's values base64-decoded; values
// that are not base64 stay as they are, so they still compare unequal.
func decodeSecretData(obj map[string]any) map[string]any {
	data, ok := obj["data"].(map[string]any)
	if !ok {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	decoded := make(map[string]any, len(data))
	for k, v := range data {
		decoded[k] = v
		if s, ok := v.(string); ok {
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				decoded[k] = string(b)
			}
		}
	}
	out["data"] = decoded
	return out
}

// escape encodes a key as a JSON pointer token (RFC 6901).
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// inventoryID is how kustomize-controller names an object in
// .status.inventory (cli-utils ObjMetadata: namespace_name_group_kind),
// with the version it was applied at.
func inventoryID(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	return fmt.Sprintf("%s_%s_%s_%s@%s", obj.GetNamespace(), obj.GetName(), gvk.Group, gvk.Kind, gvk.Version)
}

// inventoryIDs returns the Kustomization's inventory in inventoryID form.
func inventoryIDs(ks *kustomizev1.Kustomization) []string {
	var out []string
	if ks.Status.Inventory != nil {
		for _, e := range ks.Status.Inventory.Entries {
			out = append(out, e.ID+"@"+e.Version)
		}
	}
	sort.Strings(out)
	return out
}

// renderedIDs returns the rendered objects in inventoryID form.
func renderedIDs(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, inventoryID(o))
	}
	sort.Strings(out)
	return out
}
