package kustomize

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

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

// ErrExcessiveAliasing is wrapped by CheckAliases' refusals.
var ErrExcessiveAliasing = errors.New("YAML aliases expand too far")

// CheckAliases refuses any YAML file under root whose aliases expand to
// more than MaxExpandedNodes nodes. It reads only files that could hold an
// alias (an anchor '&' and an alias '*'), parses them without expanding
// anything, and counts each anchored node once, so it costs one parse of
// those files. Files that do not parse are left to the build, which names
// the error as kustomize does.
func CheckAliases(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !mayBeYAML(d.Name()) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if !bytes.ContainsRune(data, '&') || !bytes.ContainsRune(data, '*') {
			return nil
		}
		n, err := expandedNodes(data, MaxExpandedNodes)
		if err != nil {
			return nil // not YAML we can read: the build reports it
		}
		if n > MaxExpandedNodes {
			rel, _ := filepath.Rel(root, p)
			return fmt.Errorf("%s: %w: more than %d nodes once resolved (a \"billion laughs\" document?); refusing to build it", filepath.ToSlash(rel), ErrExcessiveAliasing, MaxExpandedNodes)
		}
		return nil
	})
}

// mayBeYAML reports whether krusty could read the file as YAML: resources,
// patches and kustomization files ("Kustomization" has no extension).
func mayBeYAML(name string) bool {
	switch filepath.Ext(name) {
	case ".yaml", ".yml":
		return true
	}
	return name == "Kustomization"
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
