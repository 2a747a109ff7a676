package kustomize

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CopyTree copies the regular files and symlinks of src into dst. Flux's
// generator writes kustomization.yaml into the build directory, so every
// build runs on a copy and the caller's tree is never mutated. The .git
// directory is skipped: kustomize-controller works on an artifact that has none.
func CopyTree(src, dst string) error {
	return walkTree(src, dst, func(path, target string, _ fs.DirEntry) error { return copyFile(path, target) })
}

// walkTree recreates src's directories and symlinks in dst, skipping .git,
// and hands each regular file to place.
func walkTree(src, dst string, place func(path, target string, d fs.DirEntry) error) error {
	realSrc, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := relink(realSrc, dst, path, target)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return place(path, target, d)
		}
		return nil
	})
}

// relink returns what the copy at target of the symlink at path points
// to, so it resolves as the original does. A link into the source tree
// points to the same place in the copy (an absolute one would otherwise
// leave it); a link out of the tree points to where the original goes, so
// Flux's file system refuses it, naming it, as it would in the source
// (a relative one would otherwise point somewhere else under the temp
// dir). A dangling link is kept as it is, for the build to report.
func relink(realSrc, dst, path, target string) (string, error) {
	link, err := os.Readlink(path)
	if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return link, nil
	}
	if !within(realSrc, resolved) {
		return resolved, nil
	}
	inSrc, err := filepath.Rel(realSrc, resolved)
	if err != nil {
		return "", err
	}
	return filepath.Rel(filepath.Dir(target), filepath.Join(dst, inSrc))
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	return os.WriteFile(dst, data, 0o644)
}

// linkTree lays src out in dst for a build: regular files are hard links
// (no bytes copied, so a large repository costs a directory walk), except
// kustomization files, which Flux's generator rewrites in place and are
// therefore copied. Nothing else in a build writes a file: krusty and the
// substitution only read, and dropUnbuildable replaces the files it
// rewrites by rename. Where a link cannot be made (another filesystem) the
// file is copied.
func linkTree(src, dst string) error {
	return walkTree(src, dst, func(path, target string, d fs.DirEntry) error {
		if !kustomizationFiles[d.Name()] && os.Link(path, target) == nil {
			return nil
		}
		return copyFile(path, target)
	})
}
