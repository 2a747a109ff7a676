package main

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// appFS is the sample app: a podinfo base and a prod overlay. It is embedded
// so the demo runs from any directory and pushes exactly what it was built
// with.
//
//go:embed app
var appFS embed.FS

// appRoot is the directory inside appFS that becomes the repository root.
const appRoot = "app"

// writeApp writes the embedded app under dir, which becomes the root of the
// pushed tree.
func writeApp(dir string) error {
	tree, err := fs.Sub(appFS, appRoot)
	if err != nil {
		return fmt.Errorf("opening embedded app: %w", err)
	}
	// os.CopyFS refuses to overwrite, so a stale copy is an error rather
	// than a silent mix of two trees.
	if err := os.CopyFS(dir, tree); err != nil {
		return fmt.Errorf("writing sample app to %s: %w", dir, err)
	}
	return nil
}

// appDir is where the demo writes the app before pushing it.
func appDir(envDir string) string {
	return filepath.Join(envDir, "app")
}
