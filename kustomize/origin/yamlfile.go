package origin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// parseDocs parses every document of a YAML stream, keeping positions.
func parseDocs(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" {
			continue
		}
		docs = append(docs, &doc)
	}
}

// mapValue returns the value node of key in a mapping node, or nil. It is
// only used on kustomization files and Flux Kustomization specs, which are
// both decoded case-insensitively.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	if m.Kind == yaml.DocumentNode && len(m.Content) > 0 {
		m = m.Content[0]
	}
	if m.Kind != yaml.MappingNode {
		return nil
	}
	// krusty decodes kustomization files through encoding/json, which
	// matches keys without regard to case (patchesJson6902 and
	// patchesJSON6902 both work) and lets a later duplicate win.
	var found *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if strings.EqualFold(m.Content[i].Value, key) {
			found = m.Content[i+1]
		}
	}
	return found
}

// inlineMapper returns how positions inside the text of an inline scalar
// (an inline patch) map into the file that holds it. Only literal block
// scalars ("|", "|-", "|+") keep the text's lines and columns intact, just
// indented; any other style is refused rather than guessed.
func inlineMapper(scalar *yaml.Node, fileData []byte) posMapper {
	if scalar.Style&yaml.LiteralStyle == 0 {
		return func(int, int) (int, int, Reason) { return scalar.Line, scalar.Column, ReasonInlinePatchStyle }
	}
	lines := strings.Split(string(fileData), "\n")
	indent := -1
	for i := scalar.Line; i < len(lines); i++ { // scalar.Line is the indicator line, 1-based
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		indent = len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		break
	}
	return func(line, col int) (int, int, Reason) {
		if indent < 0 {
			return scalar.Line, scalar.Column, ReasonInlinePatchStyle
		}
		return scalar.Line + line, col + indent, ""
	}
}

// errAt wraps err with a file position.
func errAt(file string, y *yaml.Node, err error) error {
	if y == nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return fmt.Errorf("%s:%d:%d: %w", file, y.Line, y.Column, err)
}
