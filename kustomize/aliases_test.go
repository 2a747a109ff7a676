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

func TestCheckAliases(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		links   map[string]string // symlink -> target
		refused string            // the file named in the refusal; "" when accepted
	}{
		{name: "anchors and aliases of ordinary size", files: map[string]string{"deployment.yaml": anchoredDeployment}},
		{name: "glob and cron stars without anchors", files: map[string]string{"cronjob.yaml": "kind: CronJob\nspec:\n  schedule: \"*/5 * * * *\"\n"}},
		{name: "nesting just under the limit", files: map[string]string{"cm.yaml": laughs(10, 5)}},
		{name: "billion laughs", files: map[string]string{"deployment.yaml": anchoredDeployment, "base/lol.yaml": laughs(9, 9)}, refused: "base/lol.yaml"},
		{name: "billion laughs in a second document", files: map[string]string{"all.yaml": anchoredDeployment + "---\n" + laughs(9, 9)}, refused: "all.yaml"},
		{name: "billion laughs in a Kustomization file", files: map[string]string{"Kustomization": laughs(9, 9)}, refused: "Kustomization"},
		{name: "whatever the extension: krusty reads what a kustomization names", files: map[string]string{"lol.txt": laughs(9, 9)}, refused: "lol.txt"},
		{name: "not read by krusty: git's objects and binary files", files: map[string]string{".git/x.yaml": laughs(9, 9),
			"logo.png": "\x89PNG\r\n\x1a\n\x00\x00" + laughs(9, 9)}},
		{name: "unparsable YAML is left to the build", files: map[string]string{"bad.yaml": "a: &a [*a\n  b: *"}},
		{name: "a symlinked file, named by its link", files: map[string]string{"vendor/lol.yaml": laughs(9, 9)},
			links: map[string]string{"overlay/lol.yaml": "../vendor/lol.yaml"}, refused: "overlay/lol.yaml"},
		{name: "a symlinked directory, walked through its link", files: map[string]string{"shared/deep/lol.yaml": laughs(9, 9)},
			links: map[string]string{"apps/shared": "../shared"}, refused: "apps/shared/deep/lol.yaml"},
		{name: "a symlink loop is walked once", files: map[string]string{"apps/deployment.yaml": anchoredDeployment},
			links: map[string]string{"apps/self": "."}},
		{name: "a symlink out of the root is left to the build, which refuses to read it",
			links: map[string]string{"lol.yaml": "{outside}/lol.yaml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, data := range tc.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
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
			err := CheckAliases(root)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrExcessiveAliasing) {
				t.Fatalf("got %v, want a refusal wrapping ErrExcessiveAliasing", err)
			}
			if !strings.HasPrefix(err.Error(), tc.refused+": ") {
				t.Fatalf("refusal %q does not start with the file %q", err, tc.refused)
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

// krusty reads a resource whatever its extension, which is why
// CheckAliases does not go by extensions.
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
