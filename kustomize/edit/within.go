package edit

import (
	"fmt"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// within is the value at ptr of the YAML document the data value v
// holds, as JSON decodes it, and whether the document has one.
func within(v any, ptr string) (any, bool, error) {
	text, ok := v.(string)
	if !ok {
		return nil, false, fmt.Errorf("%w: the field holds no document text", ErrUnsupported)
	}
	var doc any
	if err := sigsyaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, false, fmt.Errorf("the document the field holds does not parse: %w", err)
	}
	m, isMap := doc.(map[string]any)
	if !isMap {
		return nil, false, nil
	}
	got, found := jsonptr.Get(m, ptr)
	return got, found, nil
}

// setWithin changes the key ch.Within of the file that generated the
// field: the key's scalar is spliced in place, keeping its quotes and
// the rest of the file, comments and all. A key the file does not set
// is not added here.
func (p *planner) setWithin(o origin.Origin, ch Change) (string, error) {
	if o.Kind != origin.KindGeneratorFile {
		return "", fmt.Errorf("%w: %s %s is declared by %s, not read from a file", ErrUnsupported, p.ref, ch.Pointer, o.Kind)
	}
	if p.shared(o) && !p.opts.AllowSharedFiles {
		return "", fmt.Errorf("%w: %s feeds more than one overlay", ErrShared, o.File)
	}
	data, err := p.read(o.File)
	if err != nil {
		return "", err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", o.File, err)
	}
	toks, err := jsonptr.Split(ch.Within)
	if err != nil || len(doc.Content) == 0 {
		return "", fmt.Errorf("%w: %s sets no %s", ErrUnsupported, o.File, ch.Within)
	}
	n := doc.Content[0]
	for _, tok := range toks {
		if n = childNode(n, tok); n == nil {
			return "", fmt.Errorf("%w: %s sets no %s", ErrUnsupported, o.File, ch.Within)
		}
	}
	if n.Kind != yaml.ScalarNode || n.Alias != nil {
		return "", fmt.Errorf("%w: %s %s is not a plain scalar", ErrUnsupported, o.File, ch.Within)
	}
	off, err := offsetOf(data, n.Line, n.Column)
	if err != nil {
		return "", fmt.Errorf("%s: %w", o.File, err)
	}
	sp, q, err := scalarSpan(data, off)
	if err != nil {
		return "", fmt.Errorf("%s:%d:%d: %w", o.File, n.Line, n.Column, err)
	}
	text, err := formatScalar(ch.Value, q)
	if err != nil {
		return "", err
	}
	p.write(o.File, data, sp, text)
	return ScopeOrigin, nil
}

// childNode is a mapping's value at key, or a sequence's element at an
// index token; nil when there is none.
func childNode(n *yaml.Node, tok string) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		return mapValue(n, tok)
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}
