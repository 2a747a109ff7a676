package origin

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/reflux-dev/reflux/kustomize"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testCase is one build of a corpus tree: each flux-kustomization*.yaml
// beside the tree is a case with its own golden file.
type testCase struct {
	name   string
	golden string
	opts   kustomize.BuildOptions
}

func corpus(t *testing.T) []testCase {
	t.Helper()
	trees, err := filepath.Glob("../testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	var out []testCase
	for _, tree := range trees {
		fluxFiles, _ := filepath.Glob(filepath.Join(tree, "flux-kustomization*.yaml"))
		// golden.txt without a flux-kustomization.yaml is the bare build.
		if _, err := os.Stat(filepath.Join(tree, "golden.txt")); len(fluxFiles) == 0 || err == nil && !hasPlainFlux(fluxFiles) {
			fluxFiles = append([]string{""}, fluxFiles...)
		}
		for _, ff := range fluxFiles {
			out = append(out, loadCases(t, tree, ff)...)
		}
	}
	return out
}

// loadCases returns the cases of one flux-kustomization file: one, or one
// per Kustomization when the file holds several (suffixed -NAME).
func loadCases(t *testing.T, tree, fluxFile string) []testCase {
	t.Helper()
	// Remote bases, Helm charts and plugins are left out, as trace does:
	// the golden files show how the local part maps.
	tc := testCase{name: filepath.Base(tree), golden: filepath.Join(tree, "golden.txt"), opts: kustomize.BuildOptions{Root: tree, SkipUnbuildable: true}}
	if data, err := os.ReadFile(filepath.Join(tree, "substitute-from.yaml")); err == nil {
		if err := yaml.Unmarshal(data, &tc.opts.SubstituteFrom); err != nil {
			t.Fatal(err)
		}
	}
	if fluxFile == "" {
		return []testCase{tc}
	}
	all, err := kustomize.LoadKustomizations(fluxFile)
	if err != nil {
		t.Fatal(err)
	}
	suffix := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(fluxFile), "flux-kustomization"), ".yaml")
	var out []testCase
	for _, ks := range all {
		c := tc
		if len(all) > 1 {
			suffix := suffix + "-" + ks.Name
			c.name += suffix
			c.golden = filepath.Join(tree, "golden"+suffix+".txt")
		} else {
			c.name += suffix
			c.golden = filepath.Join(tree, "golden"+suffix+".txt")
		}
		c.opts.Kustomization = ks
		c.opts.KustomizationFile = filepath.Base(fluxFile)
		out = append(out, c)
	}
	return out
}

// render prints one line per leaf: OBJECT POINTER FILE:LINE:COL KIND, the
// chain below it when there is more than one layer, or REFUSED reason.
func render(idx *Index) string {
	var sb strings.Builder
	for _, ref := range idx.Objects() {
		fields, _ := idx.Fields(ref)
		for _, f := range fields {
			obj := ref.Kind + "/" + ref.Namespace + "/" + ref.Name
			if f.Refused != "" {
				fmt.Fprintf(&sb, "%s %s REFUSED %s", obj, f.Pointer, f.Refused)
				if f.Edit != nil {
					fmt.Fprintf(&sb, " edit %s (%s)", f.Edit.Position(), f.Edit.Via)
				}
				sb.WriteString("\n")
				continue
			}
			fmt.Fprintf(&sb, "%s %s %s:%d:%d %s", obj, f.Pointer, f.Origin.File, f.Origin.Line, f.Origin.Column, f.Origin.Kind)
			if f.Origin.Variable != "" {
				fmt.Fprintf(&sb, " ${%s}", f.Origin.Variable)
			}
			if len(f.Origin.Chain) > 1 {
				var parts []string
				for i := len(f.Origin.Chain) - 2; i >= 0; i-- {
					l := f.Origin.Chain[i]
					parts = append(parts, fmt.Sprintf("%s %s", l.Position(), l.Kind))
				}
				fmt.Fprintf(&sb, " <- %s", strings.Join(parts, " <- "))
			}
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

func TestGolden(t *testing.T) {
	for _, tc := range corpus(t) {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			idx, _, err := Build(context.Background(), tc.opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(idx.ModelErr).NotTo(HaveOccurred())
			got := render(idx)
			if *update {
				g.Expect(os.WriteFile(tc.golden, []byte(got), 0o644)).To(Succeed())
				return
			}
			want, err := os.ReadFile(tc.golden)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(string(want)))
		})
	}
}

func hasPlainFlux(files []string) bool {
	for _, f := range files {
		if filepath.Base(f) == "flux-kustomization.yaml" {
			return true
		}
	}
	return false
}
