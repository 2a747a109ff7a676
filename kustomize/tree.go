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
// and files over maxFile that are parsed before krusty's file system
// (budgetFS) can refuse them: kustomization files, which dropUnbuildable
// and Flux's generator read, and, when the build directory rel has no
// kustomization file, the YAML files the generator scans to write one.
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
			return checkSize(p, r, maxFile)
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
	return scannedSizes(root, dir, maxFile)
}

// scannedSizes checks the files Flux's generator parses in dir: every
// .yaml and .yml file, except under a directory with its own
// kustomization, which it names as a resource instead.
func scannedSizes(root, dir string, maxFile int64) error {
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
		return checkSize(p, r, maxFile)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil // Build names the missing path
	}
	return err
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
