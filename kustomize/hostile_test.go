package kustomize

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// hostileTree writes a tree into root; out is a directory outside it.
type hostileTree func(t *testing.T, root, out string)

func files(fs map[string]string) hostileTree {
	return func(t *testing.T, root, _ string) { writeFiles(t, root, fs) }
}

func writeFiles(t *testing.T, root string, fs map[string]string) {
	t.Helper()
	for p, c := range fs {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func configMap(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  k: v\n", name)
}

// bigConfigMap writes a ConfigMap of at least size bytes at p, a line at
// a time, so the test itself never holds it.
func bigConfigMap(t *testing.T, p string, size int) {
	t.Helper()
	bigNamed(t, p, "big", size)
}

// bigNamed is bigConfigMap with the given name.
func bigNamed(t *testing.T, p, name string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, _ := fmt.Fprintf(f, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n", name)
	line := strings.Repeat("x", 100)
	for i := 0; n < size; i++ {
		m, err := fmt.Fprintf(f, "  k%d: %s\n", i, line)
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
}

func component(body string) string {
	return "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n" + body
}

// TestBuildRefusesHostileTrees: each hostile tree of issue 22 §2 gets a
// named one-line refusal, in bounded time and memory, leaving no temp
// dir and no goroutine behind; the benign tree beside each builds.
func TestBuildRefusesHostileTrees(t *testing.T) {
	const hundredMB = 100 << 20
	tests := []struct {
		name string
		tree hostileTree
		path string
		opts BuildOptions
		// err is the sentinel of the refusal; text a part of its message.
		// Neither for a tree that builds.
		err  error
		text string
	}{
		{name: "alias bomb in a .txt resource", err: ErrExcessiveAliasing, text: "lol.txt",
			tree: files(map[string]string{"kustomization.yaml": "resources: [lol.txt]\n", "lol.txt": laughs(9, 9)})},
		{name: "a 100 MB resource", err: ErrFileTooLarge, text: "big.yaml: file over the size budget: 100.0 MiB, over the 16.0 MiB",
			tree: func(t *testing.T, root, _ string) {
				writeFiles(t, root, map[string]string{"kustomization.yaml": "resources: [big.yaml]\n"})
				bigConfigMap(t, filepath.Join(root, "big.yaml"), hundredMB)
			}},
		{name: "a 100 MB resource of another extension", err: ErrFileTooLarge, text: "data/big.txt",
			tree: func(t *testing.T, root, _ string) {
				writeFiles(t, root, map[string]string{"kustomization.yaml": "resources: [data/big.txt]\n"})
				bigConfigMap(t, filepath.Join(root, "data/big.txt"), hundredMB)
			}},
		{name: "a 100 MB file Flux's generator would scan", err: ErrFileTooLarge, text: "apps/big.yaml",
			tree: func(t *testing.T, root, _ string) { bigConfigMap(t, filepath.Join(root, "apps/big.yaml"), hundredMB) }},
		{name: "a 100 MB kustomization file", err: ErrFileTooLarge, text: "apps/kustomization.yaml",
			tree: func(t *testing.T, root, _ string) {
				writeFiles(t, root, map[string]string{"kustomization.yaml": "resources: [cm.yaml]\n", "cm.yaml": configMap("a")})
				bigConfigMap(t, filepath.Join(root, "apps/kustomization.yaml"), hundredMB)
			}},
		{name: "a 100 MB file the build never reads", path: "app",
			tree: func(t *testing.T, root, _ string) {
				writeFiles(t, root, map[string]string{"app/kustomization.yaml": "resources: [cm.yaml]\n", "app/cm.yaml": configMap("a")})
				bigConfigMap(t, filepath.Join(root, "dumps/big.txt"), hundredMB)
			}},
		{name: "more read in all than the build may", err: ErrLoadTooLarge, text: "past the 0.2 MiB it may read in all",
			opts: BuildOptions{MaxLoadSize: 200 << 10},
			tree: func(t *testing.T, root, _ string) {
				var res []string
				for i := range 10 {
					name := fmt.Sprintf("cm%d.yaml", i)
					bigNamed(t, filepath.Join(root, name), name[:3], 40<<10)
					res = append(res, name)
				}
				writeFiles(t, root, map[string]string{"kustomization.yaml": "nameSuffix: -x\nresources: [" + strings.Join(res, ", ") + "]\n"})
			}},
		{name: "components that include each other", text: "cycle detected: candidate root 'a' contains visited root 'a'", path: "app",
			tree: files(map[string]string{
				"app/kustomization.yaml": "resources: [cm.yaml]\ncomponents: [../a]\n", "app/cm.yaml": configMap("x"),
				"a/kustomization.yaml": component("components: [../b]\n"), "b/kustomization.yaml": component("components: [../a]\n"),
			})},
		{name: "a component that includes itself", text: "cycle detected", path: "app",
			tree: files(map[string]string{
				"app/kustomization.yaml": "resources: [cm.yaml]\ncomponents: [../a]\n", "app/cm.yaml": configMap("x"),
				"a/kustomization.yaml": component("components: [.]\n"),
			})},
		{name: "bases that include each other", text: "cycle detected", path: "a",
			tree: files(map[string]string{"a/kustomization.yaml": "resources: [../b]\n", "b/kustomization.yaml": "resources: [../a]\n"})},
		{name: "2,000 nested directories", err: ErrTreeTooDeep, text: "d/d/d/… (101 levels): directories nest too deep: more than 100 levels",
			tree: func(t *testing.T, root, _ string) {
				p := root
				for range 2000 {
					p = filepath.Join(p, "d")
				}
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				writeFiles(t, root, map[string]string{"cm.yaml": configMap("x")})
			}},
		{name: "a chain of 2,000 kustomizations builds, as in Flux", path: "k0",
			tree: func(t *testing.T, root, _ string) {
				fs := map[string]string{"k2000/kustomization.yaml": "resources: [cm.yaml]\n", "k2000/cm.yaml": configMap("x")}
				for i := range 2000 {
					fs[fmt.Sprintf("k%d/kustomization.yaml", i)] = fmt.Sprintf("resources: [../k%d]\n", i+1)
				}
				writeFiles(t, root, fs)
			}},
		{name: "a symlinked file leaving the root", err: ErrOutsideRoot, text: "leak.yaml: path outside the source root: it resolves to ",
			tree: func(t *testing.T, root, out string) {
				writeFiles(t, out, map[string]string{"secret.yaml": configMap("secret")})
				writeFiles(t, root, map[string]string{"kustomization.yaml": "resources: [leak.yaml]\n"})
				symlink(t, filepath.Join(out, "secret.yaml"), filepath.Join(root, "leak.yaml"))
			}},
		{name: "a relative symlinked directory leaving the root", err: ErrOutsideRoot, text: "leak: path outside the source root",
			tree: func(t *testing.T, root, out string) {
				writeFiles(t, out, map[string]string{"kustomization.yaml": "resources: [cm.yaml]\n", "cm.yaml": configMap("secret")})
				writeFiles(t, root, map[string]string{"kustomization.yaml": "resources: [leak]\n"})
				rel, err := filepath.Rel(root, out)
				if err != nil {
					t.Fatal(err)
				}
				symlink(t, rel, filepath.Join(root, "leak"))
			}},
		{name: "an absolute symlink into the root builds", path: "app",
			tree: func(t *testing.T, root, _ string) {
				writeFiles(t, root, map[string]string{"app/kustomization.yaml": "resources: [cm.yaml]\n", "shared/cm.yaml": configMap("x")})
				symlink(t, filepath.Join(root, "shared/cm.yaml"), filepath.Join(root, "app/cm.yaml"))
			}},
		{name: "a .. resource path leaving the root", err: ErrOutsideRoot, text: "/etc/passwd: path outside the source root", path: "app",
			tree: files(map[string]string{"app/kustomization.yaml": "resources: [../../../../../../../../../../etc/passwd]\n"})},
		{name: "a .. resource directory leaving the root", err: ErrOutsideRoot, text: "path outside the source root", path: "app",
			tree: files(map[string]string{"app/kustomization.yaml": "resources: [../../../../../../../../../../tmp]\n"})},
		{name: "a .. resource path inside the root builds", path: "overlays/prod",
			tree: files(map[string]string{"overlays/prod/kustomization.yaml": "resources: [../../base]\n",
				"base/kustomization.yaml": "resources: [cm.yaml]\n", "base/cm.yaml": configMap("x")})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root, out := t.TempDir(), t.TempDir()
			tt.tree(t, root, out)
			// Build's work dirs go here, so a leak shows whatever else runs.
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			goroutines := runtime.NumGoroutine()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()

			opts := tt.opts
			opts.Root, opts.Path = root, tt.path
			res, err := Build(context.Background(), opts)

			took := time.Since(start)
			runtime.ReadMemStats(&after)
			g.Expect(took).To(BeNumerically("<", 20*time.Second), "bounded time")
			g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", uint64(1<<30)), "bounded memory: no 100 MB file read")
			g.Expect(os.ReadDir(tmp)).To(BeEmpty(), "no temp dir left")
			g.Eventually(runtime.NumGoroutine).Should(BeNumerically("<=", goroutines), "no goroutine left")
			if tt.err == nil && tt.text == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res.Objects).NotTo(BeEmpty())
				return
			}
			g.Expect(err).To(HaveOccurred())
			if tt.err != nil {
				g.Expect(errors.Is(err, tt.err)).To(BeTrue(), "named: %v", err)
			} else {
				var be *BuildError
				g.Expect(errors.As(err, &be)).To(BeTrue(), "krusty's own refusal, as kustomize-controller gives it: %v", err)
			}
			g.Expect(err.Error()).To(ContainSubstring(tt.text))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			g.Expect(err.Error()).NotTo(ContainSubstring("reflux-build-"), "no temp path")
			g.Expect(len(err.Error())).To(BeNumerically("<", 1000), "one readable line")
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
