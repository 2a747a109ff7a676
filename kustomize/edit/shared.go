package edit

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

// shared reports whether the origin feeds more than this one object of
// this one overlay: either another rendered object takes a value from the
// same node (a namespace, a label, a patch with a target that matches
// several objects), or the file sits in a directory that more than one
// kustomization entry point of the tree includes (a shared base).
func (p *planner) shared(o origin.Origin) bool {
	if o.Kind == origin.KindSubstitution {
		return false // variables are per Flux Kustomization by design
	}
	fanIn := 0
	for _, ref := range p.idx.Objects() {
		fields, _ := p.idx.Fields(ref)
		for _, f := range fields {
			if f.Refused == "" && f.Origin.File == o.File && f.Origin.Line == o.Line && f.Origin.Column == o.Column {
				fanIn++
				break
			}
		}
	}
	if fanIn > 1 {
		return true
	}
	return p.entryPoints(path.Dir(o.File)) > 1
}

// entryPoints counts the kustomizations of the tree that nobody includes
// and that include dir, directly or through other kustomizations.
func (p *planner) entryPoints(dir string) int {
	edges := p.kustomizationGraph()
	included := map[string]bool{}
	for _, tos := range edges {
		for _, to := range tos {
			included[to] = true
		}
	}
	count := 0
	for from := range edges {
		if !included[from] && reaches(edges, from, dir, map[string]bool{}) {
			count++
		}
	}
	return count
}

func reaches(edges map[string][]string, from, dir string, seen map[string]bool) bool {
	if from == dir {
		return true
	}
	if seen[from] {
		return false
	}
	seen[from] = true
	for _, to := range edges[from] {
		if reaches(edges, to, dir, seen) {
			return true
		}
	}
	return false
}

// kustomizationGraph maps each kustomization directory of the tree to the
// local directories it includes as resources or components.
func (p *planner) kustomizationGraph() map[string][]string {
	edges := map[string][]string{}
	_ = filepath.WalkDir(p.root, func(file string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		switch d.Name() {
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
		default:
			return nil
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil
		}
		var k struct {
			Resources  []string `json:"resources"`
			Components []string `json:"components"`
		}
		if yaml.Unmarshal(data, &k) != nil {
			return nil
		}
		rel, _ := filepath.Rel(p.root, filepath.Dir(file))
		from := filepath.ToSlash(rel)
		edges[from] = append(edges[from], []string{}...)
		for _, r := range append(k.Resources, k.Components...) {
			to := path.Join(from, r)
			if st, err := os.Stat(filepath.Join(p.root, to)); err == nil && st.IsDir() && !strings.HasPrefix(to, "..") {
				edges[from] = append(edges[from], to)
			}
		}
		return nil
	})
	return edges
}
