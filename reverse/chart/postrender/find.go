package postrender

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

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// Setter is the post-renderer entry that sets a field.
type Setter struct {
	// Path is the JSON pointer, in the HelmRelease, of what sets the
	// field: a patch's text (/spec/postRenderers/0/kustomize/patches/1/patch)
	// or a key of an image entry (.../kustomize/images/0/newTag).
	Path string
	// Line and Column are where the field's value is within the patch's
	// text, from 1; zero for an image entry.
	Line, Column int
	// Block tells that the patch's text has more than one line: in YAML,
	// a block scalar (patch: |), whose lines are the file's from the line
	// after its key.
	Block bool
}

// At is where a file sets the field, given the position of the value at
// s.Path in it: for a block, its line within the block. The column of a
// line in a block is not known from the value's position (0).
func (s Setter) At(line, column int) (int, int) {
	if s.Block {
		return line + s.Line, 0
	}
	return line, column
}

// Find returns the entry of renderers that sets the field at pointer of
// obj, the object as post-rendered: the last to apply.
func Find(renderers []helmv2.PostRenderer, obj *unstructured.Unstructured, pointer string) (Setter, bool) {
	for i := len(renderers) - 1; i >= 0; i-- {
		k := renderers[i].Kustomize
		if k == nil {
			continue
		}
		at := fmt.Sprintf("/spec/postRenderers/%d/kustomize", i)
		// kustomize applies images after patches.
		if j, key, ok := imageSets(k.Images, obj, pointer); ok {
			return Setter{Path: fmt.Sprintf("%s/images/%d/%s", at, j, key)}, true
		}
		for j := len(k.Patches) - 1; j >= 0; j-- {
			p := k.Patches[j]
			if !Targets(p, obj) {
				continue
			}
			if n, ok := patchSets(p.Patch, obj, pointer); ok {
				return Setter{Path: fmt.Sprintf("%s/patches/%d/patch", at, j), Line: n.Line, Column: n.Column,
					Block: strings.Contains(strings.TrimRight(p.Patch, "\n"), "\n")}, true
			}
		}
	}
	return Setter{}, false
}

// Targets reports whether the patch applies to obj: its target selects
// it, as kustomize selects, or, without a target, a strategic-merge patch
// names it.
func Targets(p kustomize.Patch, obj *unstructured.Unstructured) bool {
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
// and the node of the patch text that sets it: a JSON6902 add or replace
// of the field or a map above it, or a strategic-merge patch that holds
// it, its list elements found by name as the merge finds them.
func patchSets(text string, obj *unstructured.Unstructured, pointer string) (*yaml.Node, bool) {
	var doc yaml.Node
	if yaml.Unmarshal([]byte(text), &doc) != nil || len(doc.Content) == 0 {
		return nil, false
	}
	root := doc.Content[0]
	if root.Kind == yaml.SequenceNode {
		return jsonPatchSets(root, pointer)
	}
	toks, err := jsonptr.Split(pointer)
	if err != nil {
		return nil, false
	}
	n, live := root, any(obj.Object)
	for _, tok := range toks {
		switch l := live.(type) {
		case map[string]any:
			n, live = mapEntry(n, tok), l[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i >= len(l) {
				return nil, false
			}
			n, live = listElement(n, l[i]), l[i]
		default:
			return nil, false
		}
		if n == nil {
			return nil, false
		}
	}
	return n, true
}

// jsonPatchSets finds the add or replace operation of ops that sets
// pointer: its value, or the value's key below it.
func jsonPatchSets(ops *yaml.Node, pointer string) (*yaml.Node, bool) {
	for i := len(ops.Content) - 1; i >= 0; i-- {
		op := ops.Content[i]
		kind, path, value := mapEntry(op, "op"), mapEntry(op, "path"), mapEntry(op, "value")
		if kind == nil || path == nil || value == nil || (kind.Value != "add" && kind.Value != "replace") {
			continue
		}
		switch {
		case path.Value == pointer:
			return value, true
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
				return n, true
			}
		}
	}
	return nil, false
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
