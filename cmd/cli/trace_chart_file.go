package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"go.yaml.in/yaml/v3"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/chart/postrender"
)

// helmReleaseDoc is a HelmRelease as one file declares it.
type helmReleaseDoc struct {
	// values are its spec.values, with their positions.
	values fileValues
	// release is the release it names, as helm-controller names it.
	release chart.Release
	hr      *helmv2.HelmRelease
	// root is its YAML node, and lines the file's lines: where its
	// spec.postRenderers set a field.
	root  *yaml.Node
	lines []string
}

// helmReleaseFile reads the HelmRelease FILE#NAME (or FILE, when it holds
// one HelmRelease).
func helmReleaseFile(ref string) (helmReleaseDoc, error) {
	file, name, hasName := strings.Cut(ref, "#")
	if file == "" {
		return helmReleaseDoc{}, errors.New("--chart needs --helmrelease FILE#NAME, the HelmRelease whose values to trace")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return helmReleaseDoc{}, err
	}
	var matches []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		doc := &yaml.Node{}
		if err := dec.Decode(doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return helmReleaseDoc{}, fmt.Errorf("parsing %s: %w", file, err)
		}
		root := doc
		if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
			root = root.Content[0]
		}
		if kind := chart.Child(root, "kind"); kind == nil || kind.Value != helmv2.HelmReleaseKind {
			continue
		}
		meta := chart.Child(root, "metadata")
		if n := childOf(meta, "name"); hasName && (n == nil || n.Value != name) {
			continue
		}
		matches = append(matches, root)
	}
	switch {
	case len(matches) == 0:
		return helmReleaseDoc{}, fmt.Errorf("%s has no HelmRelease %q", file, name)
	case len(matches) > 1:
		return helmReleaseDoc{}, fmt.Errorf("%s has %d HelmReleases: name one with %s#NAME", file, len(matches), file)
	}
	// Through JSON, as the API's types are tagged for it.
	var obj map[string]any
	if err := matches[0].Decode(&obj); err != nil {
		return helmReleaseDoc{}, fmt.Errorf("decoding the HelmRelease of %s: %w", file, err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return helmReleaseDoc{}, fmt.Errorf("decoding the HelmRelease of %s: %w", file, err)
	}
	hr := &helmv2.HelmRelease{}
	if err := json.Unmarshal(raw, hr); err != nil {
		return helmReleaseDoc{}, fmt.Errorf("decoding the HelmRelease of %s: %w", file, err)
	}
	out := fileValues{file: file, values: map[string]any{}, spec: chart.Child(matches[0], "spec")}
	if out.spec != nil {
		out.node = chart.Child(out.spec, "values")
	}
	if hr.Spec.Values != nil {
		if err := json.Unmarshal(hr.Spec.Values.Raw, &out.values); err != nil {
			return helmReleaseDoc{}, fmt.Errorf("spec.values of %s#%s: %w", file, hr.Name, err)
		}
	}
	// helm-controller's names: GetReleaseName and GetReleaseNamespace.
	rel := chart.Release{Name: hr.GetReleaseName(), Namespace: hr.GetReleaseNamespace(), Revision: 1}
	return helmReleaseDoc{values: out, release: rel, hr: hr, root: matches[0], lines: strings.Split(string(data), "\n")}, nil
}

func childOf(n *yaml.Node, tok string) *yaml.Node {
	if n == nil {
		return nil
	}
	return chart.Child(n, tok)
}

// postRenderer is FILE:LINE:COL of what sets a field in the HelmRelease's
// spec.postRenderers: the value s.Path names (an image entry's key), or,
// in a patch's text, the field's value within it, where the file holds
// the text as it is (a literal block, patch: |, or a quoted line). A
// folded or multi-line quoted patch is named at its start.
func (d helmReleaseDoc) postRenderer(s postrender.Setter) (string, bool) {
	n := nodeAt(d.root, s.Path)
	if n == nil || n.Kind != yaml.ScalarNode {
		return "", false
	}
	line, col := n.Line, n.Column
	text := strings.Split(n.Value, "\n")
	switch {
	case s.Line == 0 || s.Line > len(text):
	case n.Style&yaml.LiteralStyle != 0:
		// The block's text starts on the line after its indicator.
		if c, ok := d.column(n.Line+s.Line, text[s.Line-1], 0); ok {
			line, col = n.Line+s.Line, c+s.Column
		}
	case !s.Block:
		start := n.Column - 1
		if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
			start++
		}
		if c, ok := d.column(n.Line, text[0], start); ok && c == start {
			col = c + s.Column
		}
	}
	return fmt.Sprintf("%s:%d:%d", d.values.file, line, col), true
}

// column is the 0-based offset, at or after from, at which the file's
// line holds text as it is.
func (d helmReleaseDoc) column(line int, text string, from int) (int, bool) {
	if line < 1 || line > len(d.lines) {
		return 0, false
	}
	l := strings.TrimRight(d.lines[line-1], "\r")
	if from > len(l) {
		return 0, false
	}
	if i := strings.Index(l[from:], text); i >= 0 {
		return from + i, true
	}
	return 0, false
}

// nodeAt is the node at pointer below n, or nil.
func nodeAt(n *yaml.Node, pointer string) *yaml.Node {
	toks, err := jsonptr.Split(pointer)
	if err != nil {
		return nil
	}
	for _, tok := range toks {
		if n = childOf(n, tok); n == nil {
			return nil
		}
	}
	return n
}
