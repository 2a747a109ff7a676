package kustomize

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxTreeDepth bounds how deep a source tree's directories may nest.
// Flux's file system resolves every parent of every path it is handed,
// and its generator walks the build directory through it, so the cost of
// a build grows with the cube of the depth: 500 nested directories take
// 2s, 2,000 take three minutes, in kustomize-controller as in reflux.
// GitOps trees nest a handful of levels; 100 is far beyond them.
const MaxTreeDepth = 100

// ErrTreeTooDeep is wrapped by the refusal of a tree nested deeper than
// MaxTreeDepth.
var ErrTreeTooDeep = errors.New("directories nest too deep")

// checkTree refuses, before anything parses the tree at root, what would
// make the build unbounded: directories nested deeper than MaxTreeDepth,
// and files parsed before krusty's file system (budgetFS) can refuse them
// that are over maxFile or whose aliases expand past MaxExpandedNodes:
// kustomization files, which dropUnbuildable and Flux's generator read,
// and, when the build directory rel has no kustomization file, the YAML
// files the generator scans to write one. Other files are not read here:
// budgetFS checks what krusty reads, as it reads it.
func checkTree(root, rel string, maxFile int64) error {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir() && depth(r) > MaxTreeDepth:
			return fmt.Errorf("%s: %w: more than %d levels; refusing to walk them", shortPath(r), ErrTreeTooDeep, MaxTreeDepth)
		case !d.IsDir() && kustomizationFiles[d.Name()]:
			// Every kustomization file is read: dropUnbuildable reads
			// them all, Flux's generator and krusty those it builds.
			return checkLoaded(root, p, r, maxFile)
		}
		return nil
	})
	if err != nil {
		return err
	}
	dir := filepath.Join(root, rel)
	if hasKustomization(dir) {
		return nil
	}
	return scanned(root, dir, maxFile)
}

// scanned checks the files Flux's generator parses in dir: every .yaml
// and .yml file, except under a directory with its own kustomization,
// which it names as a resource instead. Each must fit maxFile, and its
// aliases must not expand past MaxExpandedNodes: the generator parses it
// with kyaml, which expands them, before krusty reads anything.
func scanned(root, dir string, maxFile int64) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && hasKustomization(p) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		r, _ := filepath.Rel(root, p)
		return checkLoaded(root, p, r, maxFile)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil // Build names the missing path
	}
	return err
}

// checkLoaded checks a file the build reads before krusty does, at p and
// named r: it must fit maxFile, and its aliases must not expand past
// MaxExpandedNodes.
func checkLoaded(root, p, r string, maxFile int64) error {
	if err := checkSize(p, r, maxFile); err != nil {
		return err
	}
	data, ok := readInside(root, p)
	if !ok {
		return nil // Flux's file system refuses it, or the build names the error
	}
	return checkAliases(filepath.ToSlash(r), data)
}

// readInside reads the regular file p when it resolves inside root, as
// Flux's secure file system reads it; ok is false for anything else (a
// symlink out of the root, a device, a missing file), which is never read.
func readInside(root, p string) ([]byte, bool) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, false
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil || !within(realRoot, real) {
		return nil, false
	}
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	data, err := os.ReadFile(real)
	return data, err == nil
}

// checkSize refuses the file at p, named r, when it is over maxFile.
func checkSize(p, r string, maxFile int64) error {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= maxFile {
		return nil // not there or not a file: the build says so
	}
	return fmt.Errorf("%s: %w: %s, over the %s a file may have; refusing to parse it",
		filepath.ToSlash(r), ErrFileTooLarge, mib(fi.Size()), mib(maxFile))
}

// hasKustomization reports whether dir holds a kustomization file.
func hasKustomization(dir string) bool {
	for name := range kustomizationFiles {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}

// depth is how many directories rel nests.
func depth(rel string) int {
	if rel == "." {
		return 0
	}
	return strings.Count(filepath.ToSlash(rel), "/") + 1
}

// shortPath keeps a refusal on one short line: the first levels of a deep
// path and how many follow.
func shortPath(rel string) string {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) <= 4 {
		return strings.Join(parts, "/")
	}
	return fmt.Sprintf("%s/… (%d levels)", strings.Join(parts[:3], "/"), len(parts))
}
