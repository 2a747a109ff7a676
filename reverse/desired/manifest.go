package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Manifest is what a revision's source tree holds: each regular file's
// path, relative to the tree's root and slash separated, with a digest of
// its content. It is taken as the artifact is extracted, seconds before a
// build of a large tree finishes, so the engine can tell at once which
// objects a new revision leaves as they were (Render.Reusable).
type Manifest struct {
	Revision string
	Files    map[string]string
}

// hashTree takes the manifest of the tree at root.
func hashTree(root, revision string) (*Manifest, error) {
	m := &Manifest{Revision: revision, Files: map[string]string{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		sum, err := fileDigest(p)
		if err != nil {
			return err
		}
		m.Files[filepath.ToSlash(rel)] = sum
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the tree of %s: %w", revision, err)
	}
	return m, nil
}

func fileDigest(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Changed lists the files that differ between two manifests: changed,
// added or removed.
func Changed(a, b *Manifest) map[string]bool {
	out := map[string]bool{}
	for p, sum := range a.Files {
		if b.Files[p] != sum {
			out[p] = true
		}
	}
	for p := range b.Files {
		if _, ok := a.Files[p]; !ok {
			out[p] = true
		}
	}
	return out
}

// isKustomization reports whether a path names a kustomization file,
// which can change any object of its build: what it includes, patches
// and transforms.
func isKustomization(p string) bool {
	switch p[strings.LastIndex(p, "/")+1:] {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}
