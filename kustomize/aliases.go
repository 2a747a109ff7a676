package kustomize

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// MaxExpandedNodes bounds the YAML nodes one file may expand to once its
// aliases are resolved. kyaml resolves every alias by copying the anchored
// node (kio.ByteReader's DeAnchor), so a "billion laughs" file of a few
// hundred bytes expands exponentially and a build never returns, and ctx
// cannot stop it. kustomize-controller would hang on the same file; reflux
// must not, because a hung build holds one of the renderer's bounded
// workers forever. A million nodes is far beyond any real manifest (a
// 10,000-object file has about 200,000) and still builds in seconds.
const MaxExpandedNodes = 1 << 20

// ErrExcessiveAliasing is wrapped by a build's refusal of a file whose
// aliases expand too far.
var ErrExcessiveAliasing = errors.New("YAML aliases expand too far")

// checkAliases refuses data, the content of the file named name, when its
// YAML aliases expand to more than MaxExpandedNodes nodes. Build calls it
// on exactly the files the build loads (issue 22 §3: it used to read every
// file of the repository on every build): each file krusty reads, through
// budgetFS, whatever its extension (a resources: entry may be "lol.txt"),
// and each file Flux's generator parses (scanned). A binary file (a NUL
// byte in the first 8 KiB, as git decides) is no YAML and is left alone.
// It parses only data that could hold an alias (an anchor '&' and an
// alias '*'), without expanding anything, and counts each anchored node
// once, so it costs one parse of those files. Data that does not parse is
// left to the build, which names the error as kustomize does.
func checkAliases(name string, data []byte) error {
	if isBinary(data) || !bytes.ContainsRune(data, '&') || !bytes.ContainsRune(data, '*') {
		return nil
	}
	n, err := expandedNodes(data, MaxExpandedNodes)
	if err != nil {
		return nil // not YAML we can read: the build reports it
	}
	if n > MaxExpandedNodes {
		return fmt.Errorf("%s: %w: more than %d nodes once resolved (a \"billion laughs\" document?); refusing to build it",
			name, ErrExcessiveAliasing, MaxExpandedNodes)
	}
	return nil
}

// binarySniff is how much of a file decides whether it is binary, as git
// decides it.
const binarySniff = 8 << 10

// isBinary reports whether data is binary, as git decides it: a NUL byte
// in its first binarySniff bytes.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0
}

// within reports whether path is root or under it; both are real paths.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// expandedNodes counts the nodes of every document in data with aliases
// resolved, stopping once the count passes limit.
func expandedNodes(data []byte, limit int) (int, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	memo := map[*yaml.Node]int{}
	total := 0
	for total <= limit {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return total, nil
			}
			return 0, err
		}
		total += countNodes(&doc, memo, limit-total)
	}
	return total, nil
}

// countNodes counts n's expanded size. An anchored node's size is
// memoised, which keeps the count linear in the parsed size however deep
// the aliases nest; a node already being counted (a cycle, which the
// parser should refuse anyway) counts as over the limit.
func countNodes(n *yaml.Node, memo map[*yaml.Node]int, limit int) int {
	if v, ok := memo[n]; ok {
		if v < 0 {
			return limit + 1
		}
		return v
	}
	memo[n] = -1
	size := 1
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		size += countNodes(n.Alias, memo, limit)
	}
	for _, c := range n.Content {
		if size > limit {
			break
		}
		size += countNodes(c, memo, limit-size)
	}
	memo[n] = size
	return size
}
