package kustomize

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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

// ErrExcessiveAliasing is wrapped by CheckAliases' refusals.
var ErrExcessiveAliasing = errors.New("YAML aliases expand too far")

// CheckAliases refuses any file under root whose YAML aliases expand to
// more than MaxExpandedNodes nodes. krusty parses whatever a kustomization
// names, whatever its extension (a resources: entry may be "lol.txt"), and
// follows symlinks that stay inside the root, so every text file counts,
// symlinked files and directories included; binary files (a NUL byte in
// the first 8 KiB, as git decides) and the .git directory do not. It
// parses only files that could hold an alias (an anchor '&' and an alias
// '*'), without expanding anything, and counts each anchored node once, so
// it costs one parse of those files. Files that do not parse are left to
// the build, which names the error as kustomize does.
func CheckAliases(root string) error {
	return checkAliases(root, DefaultMaxFileSize)
}

// checkAliases is CheckAliases reading no file over maxFile: the build
// refuses those before parsing them, if it reads them at all, and one
// read here would cost what the size budget is there to spare.
func checkAliases(root string, maxFile int64) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", root, err)
	}
	c := aliasCheck{root: root, realRoot: realRoot, walked: map[string]bool{realRoot: true}, maxFile: maxFile}
	return c.walk(root)
}

// aliasCheck walks one build root.
type aliasCheck struct {
	root, realRoot string
	// walked holds the real paths of directories walked, so a symlink
	// loop is walked once.
	walked map[string]bool
	// maxFile is the largest file read.
	maxFile int64
}

func (c *aliasCheck) walk(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return c.symlink(p)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return c.file(p, p)
	})
}

// symlink checks what a symlink inside the root points to. One pointing
// outside the root, or nowhere, is left to the build: Flux's file system
// refuses to read through it.
func (c *aliasCheck) symlink(p string) error {
	target, err := filepath.EvalSymlinks(p)
	if err != nil || !within(c.realRoot, target) {
		return nil
	}
	fi, err := os.Stat(target)
	if err != nil {
		return nil
	}
	switch {
	case fi.IsDir():
		if c.walked[target] {
			return nil
		}
		c.walked[target] = true
		// Walked under its link's name, so a refusal names the path the
		// kustomization uses.
		return c.walk(p + string(filepath.Separator))
	case fi.Mode().IsRegular():
		return c.file(p, target)
	}
	return nil
}

// file checks one file, read from path and named by p.
func (c *aliasCheck) file(p, path string) error {
	if fi, err := os.Stat(path); err == nil && fi.Size() > c.maxFile {
		return nil
	}
	data, err := readText(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if data == nil || !bytes.ContainsRune(data, '&') || !bytes.ContainsRune(data, '*') {
		return nil
	}
	n, err := expandedNodes(data, MaxExpandedNodes)
	if err != nil {
		return nil // not YAML we can read: the build reports it
	}
	if n > MaxExpandedNodes {
		rel, _ := filepath.Rel(c.root, p)
		return fmt.Errorf("%s: %w: more than %d nodes once resolved (a \"billion laughs\" document?); refusing to build it",
			filepath.ToSlash(rel), ErrExcessiveAliasing, MaxExpandedNodes)
	}
	return nil
}

// binarySniff is how much of a file decides whether it is binary, as git
// decides it.
const binarySniff = 8 << 10

// readText returns a text file's content, or nil for a binary one, which
// no YAML parser reads.
func readText(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, binarySniff)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if bytes.IndexByte(head[:n], 0) >= 0 {
		return nil, nil
	}
	rest, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return append(head[:n], rest...), nil
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
