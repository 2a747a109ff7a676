package edit

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// remove plans the deletion of a field Git declares: the smallest block
// of lines that declares it, at its origin. Lines are removed whole, so
// the comments, order and style of everything around them survive; a
// collection the deletion would leave empty goes with it, since an empty
// block would render as null, not as absent.
//
// Only origins whose deletion changes nothing else are written: one
// document (a resource or a patch), or one generator literal or env line,
// not shared with other objects or overlays. Anything else is refused by
// name, as verification would refuse it anyway, with less to say.
func (p *planner) remove(ch Change) (string, error) {
	leaves := p.under(ch.Pointer)
	if len(leaves) == 0 {
		return "", fmt.Errorf("%w: %s %s", origin.ErrFieldNotFound, p.ref, ch.Pointer)
	}
	var o origin.Origin
	for i, f := range leaves {
		if f.Refused != "" {
			return "", &origin.RefusedError{Object: p.ref, Pointer: f.Pointer, Reason: f.Refused, Edit: f.Edit}
		}
		if i == 0 {
			o = f.Origin
		} else if f.Origin.File != o.File || f.Origin.Kind != o.Kind {
			return "", fmt.Errorf("%w: %s %s is declared in more than one place (%s and %s)",
				ErrUnsupported, p.ref, ch.Pointer, o.File, f.Origin.File)
		}
		if p.shared(f.Origin) {
			return "", fmt.Errorf("%w: removing %s %s would change what %s:%d declares for other objects or overlays",
				ErrShared, p.ref, ch.Pointer, f.Origin.File, f.Origin.Line)
		}
	}
	switch o.Kind {
	case origin.KindResource, origin.KindPatch:
		return ScopeOrigin, p.removeBlock(o, leaves[0].Pointer, ch.Pointer)
	case origin.KindGeneratorLiteral, origin.KindGeneratorEnv:
		if len(leaves) != 1 || leaves[0].Pointer != ch.Pointer {
			return "", fmt.Errorf("%w: %s %s is not one generator entry", ErrUnsupported, p.ref, ch.Pointer)
		}
		return ScopeOrigin, p.removeLine(o)
	}
	return "", fmt.Errorf("%w: removing a field declared by %s (%s:%d) is not written back",
		ErrUnsupported, o.Kind, o.File, o.Line)
}

// under returns the leaves of the object at or below ptr.
func (p *planner) under(ptr string) []origin.Field {
	var out []origin.Field
	for _, f := range p.fields {
		if jsonptr.Under(f.Pointer, ptr) {
			out = append(out, f)
		}
	}
	return out
}

// yamlEntry is a node with the collection that holds it.
type yamlEntry struct {
	node, parent *yaml.Node
	// key is the node's key when parent is a mapping.
	key *yaml.Node
}

// removeBlock deletes the entry of ptr from the document holding the
// value of leaf (ptr or a leaf below it) at o.
func (p *planner) removeBlock(o origin.Origin, leaf, ptr string) error {
	data, line, col, err := p.readAt(o)
	if err != nil {
		return err
	}
	chain, err := chainTo(data, line, col)
	if err != nil {
		return fmt.Errorf("%s:%d:%d: %w", o.File, o.Line, o.Column, err)
	}
	// Climb from the leaf to the node ptr names: one level per pointer
	// segment between them. A source document nests as its render does.
	up := segmentCount(leaf) - segmentCount(ptr)
	i := len(chain) - 1 - up
	// A collection left empty goes too, up to (not including) the
	// document's root mapping.
	for i > 1 && entries(chain[i].parent) == 1 {
		i--
	}
	if i < 1 {
		return fmt.Errorf("%w: removing %s would leave %s:%d without a document", ErrUnsupported, ptr, o.File, o.Line)
	}
	e := chain[i]
	if e.parent.Style&yaml.FlowStyle != 0 {
		// Inside `{a: 1, b: 2}` an entry is part of a line, not lines.
		return fmt.Errorf("%w: %s:%d is flow-style YAML", ErrUnsupported, o.File, e.node.Line)
	}
	start, startCol := e.node.Line, e.node.Column
	if e.key != nil {
		start, startCol = e.key.Line, e.key.Column
	}
	lines := strings.SplitAfter(string(data), "\n")
	lead := lines[start-1][:startCol-1]
	if e.key == nil {
		// A list item: its line starts with the dash before the node.
		lead = strings.TrimRight(lead, " ")
		if !strings.HasSuffix(lead, "-") {
			return fmt.Errorf("%w: %s:%d is not a block list item", ErrUnsupported, o.File, start)
		}
		lead = strings.TrimSuffix(lead, "-")
		startCol = len(lead) + 1
	}
	if strings.TrimSpace(lead) != "" {
		// "- key: v" as the first key of a list item: deleting the line
		// would delete the item's dash.
		return fmt.Errorf("%w: %s:%d shares its line with the list item that holds it", ErrUnsupported, o.File, start)
	}
	end := entryEnd(lines, start, startCol)
	if e.key != nil && indentless(e.node, lines, startCol) {
		end = indentlessEnd(lines, start, startCol)
	}
	from, to := 0, 0
	for j, l := range lines {
		if j < start-1 {
			from += len(l)
		}
		if j < end {
			to += len(l)
		}
	}
	p.write(o.File, data, span{from, to}, "")
	return nil
}

// indentless reports whether n is a block list written at its key's own
// column ("env:" then "- name: X" under the e of env), which YAML allows
// and entryEnd, stopping at the first line no deeper than the key, would
// cut off after the key.
func indentless(n *yaml.Node, lines []string, keyCol int) bool {
	if n.Kind != yaml.SequenceNode || n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 {
		return false
	}
	first := lines[n.Content[0].Line-1]
	trimmed := strings.TrimLeft(first, " ")
	return len(first)-len(trimmed) == keyCol-1 && strings.HasPrefix(trimmed, "-")
}

// indentlessEnd is entryEnd for a key whose list is indentless: its items'
// lines, at the key's column and starting with a dash, belong to it.
func indentlessEnd(lines []string, line, col int) int {
	end := line
	for i := line; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" {
			continue
		}
		ind := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		if t == "---" || ind < col-1 || ind == col-1 && !strings.HasPrefix(t, "-") {
			break
		}
		end = i + 1
	}
	return end
}

// removeLine deletes the line holding a generator literal or env entry.
func (p *planner) removeLine(o origin.Origin) error {
	data, err := p.read(o.File)
	if err != nil {
		return err
	}
	line, _, err := p.locate(o.File, o.Line, o.Column)
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(data), "\n")
	if line < 1 || line > len(lines) {
		return fmt.Errorf("%s:%d: no such line", o.File, line)
	}
	from := 0
	for _, l := range lines[:line-1] {
		from += len(l)
	}
	p.write(o.File, data, span{from, from + len(lines[line-1])}, "")
	return nil
}

// chainTo returns the entries from a document's root to the node at
// line:col, each with the collection holding it; chain[0] is the root.
func chainTo(data []byte, line, col int) ([]yamlEntry, error) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			break
		}
		if len(doc.Content) == 0 {
			continue
		}
		if chain := find(yamlEntry{node: doc.Content[0]}, line, col); chain != nil {
			return chain, nil
		}
	}
	return nil, fmt.Errorf("no value at %d:%d", line, col)
}

func find(e yamlEntry, line, col int) []yamlEntry {
	n := e.node
	if n.Line == line && n.Column == col && n.Kind == yaml.ScalarNode {
		return []yamlEntry{e}
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			if c := find(yamlEntry{node: n.Content[i], parent: n, key: n.Content[i-1]}, line, col); c != nil {
				return append([]yamlEntry{e}, c...)
			}
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if c := find(yamlEntry{node: item, parent: n}, line, col); c != nil {
				return append([]yamlEntry{e}, c...)
			}
		}
	}
	return nil
}

// entries counts what a collection holds.
func entries(n *yaml.Node) int {
	if n.Kind == yaml.MappingNode {
		return len(n.Content) / 2
	}
	return len(n.Content)
}

func segmentCount(ptr string) int {
	toks, err := jsonptr.Split(ptr)
	if err != nil {
		return 0
	}
	return len(toks)
}
