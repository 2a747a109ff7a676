package origin

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

type nodeKind int

const (
	scalarNode nodeKind = iota
	mapNode
	seqNode
)

// node is the model's view of a YAML value: the value itself plus, on every
// scalar, the chain of layers that set it. Maps keep key order.
type node struct {
	kind   nodeKind
	keys   []string
	fields map[string]*node
	items  []*node
	value  interface{}
	chain  []Layer
	// substituted marks strings rewritten by post-build substitution, whose
	// YAML type krusty's output may re-resolve (a "3" becomes 3).
	substituted bool
}

func newMap() *node { return &node{kind: mapNode, fields: map[string]*node{}} }

func newScalar(v interface{}, l Layer) *node {
	return &node{kind: scalarNode, value: v, chain: []Layer{l}}
}

// get returns the field of a map node, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != mapNode {
		return nil
	}
	return n.fields[key]
}

// set adds or replaces a field, keeping the key's position when present.
func (n *node) set(key string, v *node) {
	if _, ok := n.fields[key]; !ok {
		n.keys = append(n.keys, key)
	}
	n.fields[key] = v
}

func (n *node) del(key string) {
	if _, ok := n.fields[key]; !ok {
		return
	}
	delete(n.fields, key)
	for i, k := range n.keys {
		if k == key {
			n.keys = append(n.keys[:i:i], n.keys[i+1:]...)
			return
		}
	}
}

// ensureMap returns the map at key, creating it when absent.
func (n *node) ensureMap(key string) *node {
	if c := n.get(key); c != nil && c.kind == mapNode {
		return c
	}
	c := newMap()
	n.set(key, c)
	return c
}

// str returns the string value of a scalar field, or "".
func (n *node) str(path ...string) string {
	c := n
	for _, p := range path {
		c = c.get(p)
	}
	if c == nil || c.kind != scalarNode {
		return ""
	}
	s, _ := c.value.(string)
	return s
}

// clone deep-copies the node; chains are copied so later appends don't alias.
func (n *node) clone() *node {
	if n == nil {
		return nil
	}
	c := &node{kind: n.kind, value: n.value, chain: append([]Layer(nil), n.chain...)}
	if n.kind == mapNode {
		c.fields = make(map[string]*node, len(n.fields))
		c.keys = append([]string(nil), n.keys...)
		for k, v := range n.fields {
			c.fields[k] = v.clone()
		}
	}
	for _, it := range n.items {
		c.items = append(c.items, it.clone())
	}
	return c
}

// overlay returns a copy of src for writing over old: scalars replacing a
// scalar keep old's chain, so the chain shows every layer from base up.
func overlay(old, src *node) *node {
	c := src.clone()
	if old != nil && old.kind == scalarNode && c.kind == scalarNode {
		c.chain = append(append([]Layer(nil), old.chain...), c.chain...)
	}
	return c
}

// setScalar overrides or creates the scalar at key with one more layer.
func (n *node) setScalar(key string, v interface{}, l Layer) {
	n.set(key, overlay(n.get(key), newScalar(v, l)))
}

// posMapper turns a yaml.v3 node position into a layer position. Inline
// patches use it to shift positions into the enclosing kustomization file.
type posMapper func(line, col int) (int, int, Reason)

func identityPos(line, col int) (int, int, Reason) { return line, col, "" }

// fromYAML converts a parsed YAML node into the model, stamping every
// scalar with a layer of the given kind at its own position.
func fromYAML(y *yaml.Node, file string, kind Kind, via string, pm posMapper) (*node, error) {
	switch y.Kind {
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return nil, nil
		}
		return fromYAML(y.Content[0], file, kind, via, pm)
	case yaml.AliasNode:
		return fromYAML(y.Alias, file, kind, via, pm)
	case yaml.MappingNode:
		n := newMap()
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Tag == "!!merge" {
				return nil, fmt.Errorf("%s:%d: YAML merge keys are not supported", file, k.Line)
			}
			c, err := fromYAML(v, file, kind, via, pm)
			if err != nil {
				return nil, err
			}
			n.set(k.Value, c)
		}
		return n, nil
	case yaml.SequenceNode:
		n := &node{kind: seqNode, items: []*node{}}
		for _, it := range y.Content {
			c, err := fromYAML(it, file, kind, via, pm)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, c)
		}
		return n, nil
	}
	var v interface{} = y.Value
	if y.Tag != "!!timestamp" {
		v = nil
	}
	if err := decodeScalar(y, &v); err != nil {
		return nil, fmt.Errorf("%s:%d:%d: %w", file, y.Line, y.Column, err)
	}
	line, col, reason := pm(y.Line, y.Column)
	return newScalar(normalizeScalar(v), Layer{File: file, Line: line, Column: col, Kind: kind, Via: via, refused: reason}), nil
}

// normalizeScalar maps yaml.v3 scalar types onto the JSON types that
// unstructured objects hold, so the cross-check compares like with like.
func normalizeScalar(v interface{}) interface{} {
	switch t := v.(type) {
	case int:
		return int64(t)
	case uint64:
		return int64(t)
	case float32:
		return float64(t)
	}
	return v
}

// decodeScalar decodes a scalar unless v already holds its raw text:
// timestamps stay strings, as they do in the objects krusty renders.
func decodeScalar(y *yaml.Node, v *interface{}) error {
	if *v != nil {
		return nil
	}
	return y.Decode(v)
}
