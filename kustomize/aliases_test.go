package kustomize

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// laughs returns a ConfigMap whose aliases nest depth levels of width
// each: width^depth nodes once resolved, from a few hundred bytes.
func laughs(width, depth int) string {
	var s strings.Builder
	s.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  a: &a \"lol\"\n")
	prev := "a"
	for i := 0; i < depth; i++ {
		n := string(rune('b' + i))
		s.WriteString("  " + n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", width), ",") + "]\n")
		prev = n
	}
	return s.String()
}

const anchoredDeployment = `# Labels shared through an anchor, as some teams write them.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: &labels
    app: web
    tier: frontend
spec:
  replicas: 2
  selector:
    matchLabels: *labels
  template:
    metadata:
      labels: *labels
    spec:
      containers:
        - name: web
          image: nginx:1.25 # pinned by the platform team
`

// kust is a kustomization naming resources.
func kust(resources ...string) string {
	return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [" + strings.Join(resources, ", ") + "]\n"
}

// TestBuildChecksTheAliasesOfWhatItLoads: every file the build loads is
// checked, whatever its extension or the symlink it is read through, and
// nothing else is read (issue 22 §3: the check read every file of the
// repository on every build).
func TestBuildChecksTheAliasesOfWhatItLoads(t *testing.T) {
	cases := []struct {
		name  string
		path  string
		files map[string]string
		links map[string]string // symlink -> target
		// refused is the file named in the refusal; "" when it builds.
		refused string
		// outside is set when the refusal is the secure file system's.
		outside bool
	}{
		{name: "anchors and aliases of ordinary size", files: map[string]string{"kustomization.yaml": kust("deployment.yaml"),
			"deployment.yaml": anchoredDeployment}},
		{name: "glob and cron stars without anchors", files: map[string]string{"kustomization.yaml": kust("cronjob.yaml"),
			"cronjob.yaml": "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  schedule: \"*/5 * * * *\"\n"}},
		{name: "billion laughs in a resource", files: map[string]string{"kustomization.yaml": kust("deployment.yaml", "base/lol.yaml"),
			"deployment.yaml": anchoredDeployment, "base/lol.yaml": laughs(9, 9)}, refused: "base/lol.yaml"},
		{name: "billion laughs in a second document", files: map[string]string{"kustomization.yaml": kust("all.yaml"),
			"all.yaml": anchoredDeployment + "---\n" + laughs(9, 9)}, refused: "all.yaml"},
		{name: "billion laughs in the kustomization file", files: map[string]string{"Kustomization": laughs(9, 9)}, refused: "Kustomization"},
		{name: "whatever the extension: krusty reads what a kustomization names", files: map[string]string{
			"kustomization.yaml": kust("lol.txt"), "lol.txt": laughs(9, 9)}, refused: "lol.txt"},
		{name: "a file Flux's generator parses", path: "apps", files: map[string]string{"apps/lol.yaml": laughs(9, 9)},
			refused: "apps/lol.yaml"},
		{name: "a file the build never loads is never read", path: "app", files: map[string]string{
			"app/kustomization.yaml": kust("deployment.yaml"), "app/deployment.yaml": anchoredDeployment,
			"other/lol.yaml": laughs(9, 9), "app/unused.yaml": laughs(9, 9), ".git/x.yaml": laughs(9, 9)}},
		{name: "unparsable YAML is left to the build, which names it", files: map[string]string{"kustomization.yaml": kust("cm.yaml"),
			"cm.yaml": configMap("a"), "bad.yaml": "a: &a [*a\n  b: *"}},
		{name: "a symlinked file, named by its link", files: map[string]string{"kustomization.yaml": kust("overlay/lol.yaml"),
			"vendor/lol.yaml": laughs(9, 9)}, links: map[string]string{"overlay/lol.yaml": "../vendor/lol.yaml"}, refused: "overlay/lol.yaml"},
		{name: "a symlink out of the root: Flux's file system refuses to read it", files: map[string]string{
			"kustomization.yaml": kust("lol.yaml")}, links: map[string]string{"lol.yaml": "{outside}/lol.yaml"}, outside: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tc.files)
			outside := t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "lol.yaml"), []byte(laughs(9, 9)), 0o644); err != nil {
				t.Fatal(err)
			}
			for name, target := range tc.links {
				target = strings.ReplaceAll(target, "{outside}", outside)
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Build(context.Background(), BuildOptions{Root: root, Path: tc.path})
			switch {
			case tc.outside:
				if !errors.Is(err, ErrOutsideRoot) {
					t.Fatalf("got %v, want a refusal wrapping ErrOutsideRoot", err)
				}
			case tc.refused == "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case !errors.Is(err, ErrExcessiveAliasing):
				t.Fatalf("got %v, want a refusal wrapping ErrExcessiveAliasing", err)
			case !strings.Contains(err.Error(), tc.refused+": "+ErrExcessiveAliasing.Error()):
				t.Fatalf("refusal %q does not name the file %q", err, tc.refused)
			}
		})
	}
}

func TestExpandedNodesCountsAliasesResolved(t *testing.T) {
	// 10^5 leaf aliases under five levels of sequences: the count must
	// see the expansion, not the parsed size.
	n, err := expandedNodes([]byte(laughs(10, 5)), MaxExpandedNodes)
	if err != nil {
		t.Fatal(err)
	}
	if n < 100_000 || n > MaxExpandedNodes {
		t.Fatalf("counted %d nodes, want between 1e5 and the limit", n)
	}
	// Without aliases, the count is the parsed size.
	if n, err = expandedNodes([]byte("a: [1, 2, 3]\n"), MaxExpandedNodes); err != nil || n != 7 {
		t.Fatalf("counted %d (%v), want 7: document, map, key, sequence, three items", n, err)
	}
}

// TestBuildRefusesBillionLaughs is the build as reflux's renderer calls
// it: the refusal comes back as an error naming the file, instead of a
// build that never returns.
func TestBuildRefusesBillionLaughs(t *testing.T) {
	root := t.TempDir()
	if err := CopyTree(filepath.Join("testdata", "plain-dir"), root); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "lol.yaml"), []byte(laughs(9, 9)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), BuildOptions{Root: root})
	if !errors.Is(err, ErrExcessiveAliasing) || !strings.Contains(err.Error(), "lol.yaml") {
		t.Fatalf("Build returned %v, want a refusal naming lol.yaml", err)
	}
}

// krusty reads a resource whatever its extension, which is why the alias
// check does not go by extensions.
func TestBuildReadsAResourceOfAnyExtension(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - flags.txt\n",
		"flags.txt":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\ndata:\n  MODE: live\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Build(context.Background(), BuildOptions{Root: root})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if len(res.Objects) != 1 || res.Objects[0].GetName() != "flags" {
		t.Fatalf("built %d objects, want the ConfigMap flags from flags.txt", len(res.Objects))
	}
	if err := os.WriteFile(filepath.Join(root, "flags.txt"), []byte(laughs(9, 9)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), BuildOptions{Root: root}); !errors.Is(err, ErrExcessiveAliasing) {
		t.Fatalf("Build of a billion-laughs flags.txt returned %v, want a refusal", err)
	}
}
