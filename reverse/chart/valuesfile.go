package chart

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// ValuesFile is a values document with its positions in the file that
// holds it: a HelmRelease's spec.values as its file declares them, or a
// values file that spec.valuesFrom takes.
type ValuesFile struct {
	// File is the file's path.
	File string
	// Node is the values mapping; nil when the document sets none.
	Node *yaml.Node
	// Err is why the file is no values document, when it is not: a
	// YAML error, or a document that is not a mapping.
	Err error
}

// ParseValuesFile parses data, the whole text of file, as one values
// document. One that does not parse, or is not a mapping, comes back
// with its Err: helm-controller fails a release on it.
func ParseValuesFile(file string, data []byte) ValuesFile {
	doc := &yaml.Node{}
	if err := yaml.Unmarshal(data, doc); err != nil {
		return ValuesFile{File: file, Err: fmt.Errorf("parsing values file %s: %w", file, err)}
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	switch {
	case doc.Kind == 0, doc.Kind == yaml.DocumentNode && len(doc.Content) == 0, doc.ShortTag() == "!!null":
		// An empty file sets nothing.
		return ValuesFile{File: file}
	case doc.Kind != yaml.MappingNode:
		return ValuesFile{File: file, Err: fmt.Errorf("values file %s is not a mapping of keys", file)}
	}
	return ValuesFile{File: file, Node: doc}
}

// Position is where the file sets the key at pointer (Key.Pointer): the
// line and column of its value.
func (v ValuesFile) Position(pointer string) (line, column int, ok bool) {
	toks, err := jsonptr.Split(pointer)
	if err != nil || v.Node == nil {
		return 0, 0, false
	}
	n := v.Node
	for _, tok := range toks {
		if n = Child(n, tok); n == nil {
			return 0, 0, false
		}
	}
	return n.Line, n.Column, true
}

// Child is the node under tok: a mapping's value, or a sequence's
// element; nil when there is none.
func Child(n *yaml.Node, tok string) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == tok {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}
