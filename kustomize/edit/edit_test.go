package edit

import (
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

var update = flag.Bool("update", false, "rewrite expected trees")

// caseSpec is testdata/<case>/change.yaml.
type caseSpec struct {
	Kustomization string           `json:"kustomization"`
	Path          string           `json:"path"`
	AllowShared   bool             `json:"allowShared"`
	Object        origin.ObjectRef `json:"object"`
	Pointer       string           `json:"pointer"`
	Value         interface{}      `json:"value"`
	Remove        bool             `json:"remove"`
	Within        string           `json:"within"`
}

func loadSpec(t *testing.T, dir string) (caseSpec, Options) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "change.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var spec caseSpec
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	if f, ok := spec.Value.(float64); ok && f == float64(int64(f)) {
		spec.Value = int64(f)
	}
	return spec, Options{AllowSharedFiles: spec.AllowShared}
}

// buildOptions points the build at a copy of the case's original tree.
func buildOptions(t testing.TB, spec caseSpec, root string) kustomize.BuildOptions {
	t.Helper()
	opts := kustomize.BuildOptions{Root: root, Path: spec.Path}
	if spec.Kustomization != "" {
		ks, err := kustomize.LoadKustomization(filepath.Join(root, spec.Kustomization))
		if err != nil {
			t.Fatal(err)
		}
		opts.Kustomization, opts.KustomizationFile = ks, spec.Kustomization
	}
	if data, err := os.ReadFile(filepath.Join(root, "substitute-from.yaml")); err == nil {
		if err := yaml.Unmarshal(data, &opts.SubstituteFrom); err != nil {
			t.Fatal(err)
		}
	}
	return opts
}

func TestPlanGoldenTrees(t *testing.T) {
	cases, err := filepath.Glob("testdata/*/change.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		dir := filepath.Dir(c)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			g := NewWithT(t)
			spec, opts := loadSpec(t, dir)
			work := t.TempDir()
			g.Expect(kustomize.CopyTree(filepath.Join(dir, "original"), work)).To(Succeed())
			opts.Build = buildOptions(t, spec, work)
			res, err := Plan(context.Background(), opts, Change{Object: spec.Object, Pointer: spec.Pointer, Value: spec.Value, Remove: spec.Remove, Within: spec.Within})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Write(work)).To(Succeed())
			expected := filepath.Join(dir, "expected")
			if *update {
				g.Expect(os.RemoveAll(expected)).To(Succeed())
				g.Expect(kustomize.CopyTree(work, expected)).To(Succeed())
				return
			}
			g.Expect(readTree(t, work)).To(Equal(readTree(t, expected)))
		})
	}
}

func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPlanScopes(t *testing.T) {
	tests := []struct {
		dir   string
		scope string
	}{
		{"shared-base-replicas-entry", ScopeOverlayEntry},
		{"shared-base-writes-overlay", ScopeOverlayPatch},
		{"shared-image-falls-back-to-patch", ScopeOverlayPatch},
		{"shared-base-allowed", ScopeOrigin},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			g := NewWithT(t)
			dir := filepath.Join("testdata", tt.dir)
			spec, opts := loadSpec(t, dir)
			opts.Build = buildOptions(t, spec, filepath.Join(dir, "original"))
			res, err := Plan(context.Background(), opts, Change{Object: spec.Object, Pointer: spec.Pointer, Value: spec.Value, Remove: spec.Remove, Within: spec.Within})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Scope).To(Equal(tt.scope))
		})
	}
}
