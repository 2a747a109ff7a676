package origin

import (
	"fmt"
	"os"
	"path"

	yaml "go.yaml.in/yaml/v3"
)

// parsePatches parses a patches, patchesJson6902 or patchesStrategicMerge
// list. Patch files are read with their own positions; inline patches are
// mapped back into the kustomization file k.
func (b *builder) parsePatches(k *kfile, v *yaml.Node, kind Kind, via string, smOnly bool) ([]patchSrc, error) {
	var out []patchSrc
	for i, it := range v.Content {
		ps := patchSrc{via: fmt.Sprintf("%s[%d]", via, i)}
		var err error
		switch {
		case smOnly && it.Kind == yaml.ScalarNode:
			ps.docs, err = b.patchDocs(k, it.Value, it, kind, ps.via)
		case it.Kind == yaml.MappingNode:
			if t := mapValue(it, "target"); t != nil {
				ps.target = parseSelector(t)
			}
			if p := mapValue(it, "path"); p != nil {
				ps.docs, err = b.patchDocs(k, p.Value, nil, kind, ps.via)
			} else if p := mapValue(it, "patch"); p != nil {
				ps.docs, err = b.patchDocs(k, "", p, kind, ps.via)
			}
		default:
			err = fmt.Errorf("unsupported patch entry")
		}
		if err != nil {
			return nil, errAt(k.path, it, err)
		}
		out = append(out, ps)
	}
	return out, nil
}

// patchDocs loads a patch from file rel (relative to k's directory) when it
// exists, or else from the inline scalar.
func (b *builder) patchDocs(k *kfile, rel string, inline *yaml.Node, kind Kind, via string) ([]*node, error) {
	if rel != "" {
		p := path.Join(k.dir, rel)
		b.otherFiles = markRead(b.otherFiles, p)
		if data, err := os.ReadFile(b.abs(p)); err == nil {
			return docsToNodes(data, p, kind, via, identityPos)
		}
		if inline == nil {
			return nil, fmt.Errorf("reading patch %s: not found", p)
		}
	}
	return docsToNodes([]byte(inline.Value), k.path, kind, via, inlineMapper(inline, k.data))
}

func docsToNodes(data []byte, file string, kind Kind, via string, pm posMapper) ([]*node, error) {
	docs, err := parseDocs(data)
	if err != nil {
		return nil, fmt.Errorf("parsing patch in %s: %w", file, err)
	}
	var out []*node
	for _, d := range docs {
		n, err := fromYAML(d, file, kind, via, pm)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func parseSelector(t *yaml.Node) *selector {
	get := func(k string) string {
		if n := mapValue(t, k); n != nil {
			return n.Value
		}
		return ""
	}
	return &selector{
		group: get("group"), version: get("version"), kind: get("kind"),
		name: get("name"), namespace: get("namespace"),
		labelSelector: get("labelSelector"), annotationSelector: get("annotationSelector"),
	}
}

// applyPatch applies one patch source to the objects, the way kustomize's
// PatchTransformer does: a sequence is a JSON6902 patch and needs a target;
// a mapping is a strategic-merge patch that targets itself unless a
// target is given.
func applyPatch(objs []*object, ps patchSrc) ([]*object, error) {
	for _, doc := range ps.docs {
		if doc == nil {
			continue
		}
		if doc.kind == seqNode {
			if ps.target == nil {
				return nil, fmt.Errorf("%s: JSON6902 patch needs a target", ps.via)
			}
			for _, o := range objs {
				ok, err := ps.target.matches(o)
				if err != nil {
					return nil, err
				}
				if ok {
					// kustomize applied this patch (the build the model
					// explains succeeded), so an op the model cannot apply
					// is the model's gap, not the tree's: the ops before it
					// stand, and the fields it and the rest would set
					// disagree with the render and are refused one by one,
					// while every other object and patch stays mapped
					// (issue 21 §2).
					_ = applyJSON6902(o, doc)
				}
			}
			continue
		}
		var err error
		if objs, err = applySMPDoc(objs, doc, ps); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// applySMPDoc applies one strategic-merge document; "$patch: delete" at
// the top removes the matched objects.
func applySMPDoc(objs []*object, doc *node, ps patchSrc) ([]*object, error) {
	kept := objs[:0:0]
	for _, o := range objs {
		var ok bool
		var err error
		if ps.target != nil {
			ok, err = ps.target.matches(o)
		} else {
			ok = o.matchesPatch(doc)
		}
		if err != nil {
			return nil, err
		}
		if ok && doc.str("$patch") == "delete" {
			continue
		}
		kept = append(kept, o)
		if !ok {
			continue
		}
		p := doc.clone()
		if ps.target != nil {
			// kustomize points a targeted SMP at each match: the patch's own
			// name and kind don't take part.
			if md := p.get("metadata"); md != nil {
				md.del("name")
				md.del("namespace")
			}
			p.del("kind")
			p.del("apiVersion")
		}
		// As for a JSON6902 op above: a merge the model cannot make leaves
		// the object's fields to be refused where they disagree.
		_ = mergeSMP(o, p)
	}
	// No match means the model lacks the object kustomize patched (an
	// unmodelled construct renamed or made it): its fields are refused as
	// not in the model, and the rest of the tree stays mapped.
	return kept, nil
}
