package edit

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// addsNested reports whether a change of a field the object does not
// have may add it, with the maps above it: a key under a HelmRelease's
// spec.values, which a chart's values.yaml defaults (issue 19 §6).
// Anywhere else a missing field is not a values key, and whether the
// schema takes it is not a question a render answers.
func addsNested(ref origin.ObjectRef, ptr string) bool {
	return ref.Kind == "HelmRelease" && strings.HasPrefix(ptr, "/spec/values/")
}

// addNested adds a field the rendered object does not have, and the maps
// above it it lacks, to the map of its deepest declared ancestor, where
// that map is declared: an overlay's patch of it before the resource,
// since a patch is the narrower scope. A shared document gets an overlay
// patch instead, as a set does.
func (p *planner) addNested(ch Change) (string, error) {
	toks, err := jsonptr.Split(ch.Pointer)
	if err != nil || len(toks) < 2 {
		return "", fmt.Errorf("%w: %q names no field that can be added", ErrUnsupported, ch.Pointer)
	}
	for n := len(toks) - 1; n >= 1; n-- {
		o := p.declaredUnder(jsonptr.Join(toks[:n]...))
		if o == nil {
			continue
		}
		if p.shared(*o) && !p.opts.AllowSharedFiles {
			return ScopeOverlayPatch, p.overlayPatch(ch)
		}
		return ScopeOrigin, p.addUnder(*o, toks[:n], toks[n:], ch.Value)
	}
	return "", fmt.Errorf("%w: nothing above %s %s is declared", ErrUnsupported, p.ref, ch.Pointer)
}

// declaredUnder is the origin of a leaf below the map at ptr that a
// resource or a patch document declares, a patch's first; nil if none.
func (p *planner) declaredUnder(ptr string) *origin.Origin {
	var best *origin.Origin
	for _, f := range p.fields {
		if f.Refused != "" || !strings.HasPrefix(f.Pointer, ptr+"/") {
			continue
		}
		switch {
		case f.Origin.Kind == origin.KindPatch:
			o := f.Origin
			return &o
		case f.Origin.Kind == origin.KindResource && best == nil:
			o := f.Origin
			best = &o
		}
	}
	return best
}

// addUnder inserts the keys of add, nested, after the last entry of the
// map at path in the document of o's file that holds o, at that entry's
// indentation. The map must be a block map with an entry: a flow map or
// an empty one is refused rather than rewritten.
func (p *planner) addUnder(o origin.Origin, path, add []string, v any) error {
	data, line, _, err := p.readAt(o)
	if err != nil {
		return err
	}
	doc, err := documentAt(data, line)
	if err != nil {
		return fmt.Errorf("%s: %w", o.File, err)
	}
	m := doc
	for _, tok := range path {
		if m = mapValue(m, tok); m == nil {
			return fmt.Errorf("%w: %s does not declare %s as a map", ErrUnsupported, o.File, jsonptr.Join(path...))
		}
	}
	if m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 || len(m.Content) == 0 {
		return fmt.Errorf("%w: %s in %s is not a block map with entries", ErrUnsupported, jsonptr.Join(path...), o.File)
	}
	return p.appendEntry(o.File, data, m, add, v)
}

// documentAt is the root node of the document of data that holds line.
func documentAt(data []byte, line int) (*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var found *yaml.Node
	for {
		var d yaml.Node
		if err := dec.Decode(&d); err != nil {
			break
		}
		if len(d.Content) == 0 {
			continue
		}
		if root := d.Content[0]; root.Line <= line {
			found = root
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no document holds line %d", line)
	}
	return found, nil
}

// mapValue is the value of key in the mapping node m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
