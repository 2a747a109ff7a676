package helmlive

import (
	"fmt"
	"strconv"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// postRendererLines finds, for a field of obj (the release's object), the
// line in Git of the HelmRelease's post-renderer patch that sets it: the
// last patch that targets obj and sets the field, since later patches
// apply later. idx and ref are the HelmRelease in the index of the tree
// that applies it. nil when none is found.
func postRendererLines(hr *helmv2.HelmRelease, idx *origin.Index, ref origin.ObjectRef, obj *unstructured.Unstructured) func(string) *refluxv1.FieldOrigin {
	if idx == nil || len(hr.Spec.PostRenderers) == 0 {
		return nil
	}
	return func(pointer string) *refluxv1.FieldOrigin {
		for i := len(hr.Spec.PostRenderers) - 1; i >= 0; i-- {
			k := hr.Spec.PostRenderers[i].Kustomize
			if k == nil {
				continue
			}
			for j := len(k.Patches) - 1; j >= 0; j-- {
				p := k.Patches[j]
				if !targets(p, obj) {
					continue
				}
				n, ok := patchSets(p.Patch, obj, pointer)
				if !ok {
					continue
				}
				at := fmt.Sprintf("/spec/postRenderers/%d/kustomize/patches/%d/patch", i, j)
				o := observe.Origin(idx, ref, at)
				if o == nil || o.Refused != "" || o.Line == 0 {
					return nil
				}
				out := &refluxv1.FieldOrigin{File: o.File, Line: o.Line, Kind: string(chart.KindPostRenderer)}
				if strings.Contains(strings.TrimRight(p.Patch, "\n"), "\n") {
					// A block scalar (patch: |): its text starts on the
					// line after the key, and keeps its lines. Where
					// within the line is not known without the file.
					out.Line += int32(n)
				} else {
					out.Column = o.Column
				}
				return out
			}
		}
		return nil
	}
}

// targets reports whether the patch applies to obj: its target selects
// it, as kustomize selects (names and namespaces are regular
// expressions), or, without a target, a strategic-merge patch names it.
func targets(p kustomize.Patch, obj *unstructured.Unstructured) bool {
	t := p.Target
	if t == nil {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal([]byte(p.Patch), &head) != nil {
			return false
		}
		return head.Kind == obj.GetKind() && head.Metadata.Name == obj.GetName()
	}
	gv, _ := schema.ParseGroupVersion(obj.GetAPIVersion())
	sel, err := ktypes.NewSelectorRegex(&ktypes.Selector{ResId: resid.ResId{
		Gvk:  resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind},
		Name: t.Name, Namespace: t.Namespace,
	}})
	if err != nil {
		return false
	}
	if !sel.MatchGvk(resid.Gvk{Group: gv.Group, Version: gv.Version, Kind: obj.GetKind()}) ||
		!sel.MatchName(obj.GetName()) || !sel.MatchNamespace(obj.GetNamespace()) {
		return false
	}
	return matches(t.LabelSelector, obj.GetLabels()) && matches(t.AnnotationSelector, obj.GetAnnotations())
}

func matches(selector string, set map[string]string) bool {
	if selector == "" {
		return true
	}
	s, err := labels.Parse(selector)
	return err == nil && s.Matches(labels.Set(set))
}

// patchSets reports whether the patch text sets obj's field at pointer,
// and the line of the patch text (1-based) that sets it: a JSON6902
// add or replace of the field or a map above it, or a strategic-merge
// patch that holds it, its list elements found by name as the merge
// finds them.
func patchSets(text string, obj *unstructured.Unstructured, pointer string) (int, bool) {
	var doc yaml.Node
	if yaml.Unmarshal([]byte(text), &doc) != nil || len(doc.Content) == 0 {
		return 0, false
	}
	root := doc.Content[0]
	if root.Kind == yaml.SequenceNode {
		return jsonPatchSets(root, pointer)
	}
	toks, err := jsonptr.Split(pointer)
	if err != nil {
		return 0, false
	}
	n, live := root, any(obj.Object)
	for _, tok := range toks {
		switch l := live.(type) {
		case map[string]any:
			n, live = mapEntry(n, tok), l[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i >= len(l) {
				return 0, false
			}
			n, live = listElement(n, l[i]), l[i]
		default:
			return 0, false
		}
		if n == nil {
			return 0, false
		}
	}
	return n.Line, true
}

// jsonPatchSets finds the add or replace operation of ops that sets
// pointer: the line of its value, or of the value's key below it.
func jsonPatchSets(ops *yaml.Node, pointer string) (int, bool) {
	for i := len(ops.Content) - 1; i >= 0; i-- {
		op := ops.Content[i]
		kind, path, value := mapEntry(op, "op"), mapEntry(op, "path"), mapEntry(op, "value")
		if kind == nil || path == nil || value == nil || (kind.Value != "add" && kind.Value != "replace") {
			continue
		}
		switch {
		case path.Value == pointer:
			return value.Line, true
		case strings.HasPrefix(pointer, path.Value+"/"):
			toks, err := jsonptr.Split(strings.TrimPrefix(pointer, path.Value))
			if err != nil {
				continue
			}
			n := value
			for _, tok := range toks {
				if n = mapEntry(n, tok); n == nil {
					break
				}
			}
			if n != nil {
				return n.Line, true
			}
		}
	}
	return 0, false
}

// mapEntry is the value of key in the mapping node n, or nil.
func mapEntry(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// listElement is the element of the patch's list n that merges into the
// object's element el: the one with el's name.
func listElement(n *yaml.Node, el any) *yaml.Node {
	m, ok := el.(map[string]any)
	name, named := m["name"].(string)
	if !ok || !named || n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	for _, c := range n.Content {
		if v := mapEntry(c, "name"); v != nil && v.Value == name {
			return c
		}
	}
	return nil
}
