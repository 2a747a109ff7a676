package edit

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
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
// local directories it includes as resources or components. Flux
// Kustomizations found in the tree are entry points too, pointing at their
// spec.path: two clusters building the same directory share it.
func (p *planner) kustomizationGraph() map[string][]string {
	edges := map[string][]string{}
	_ = filepath.WalkDir(p.root, func(file string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		switch d.Name() {
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
		default:
			if ext := filepath.Ext(file); ext == ".yaml" || ext == ".yml" {
				p.fluxEdges(file, edges)
			}
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

// fluxEdges adds an edge from every Flux Kustomization document in file to
// the directory its spec.path names, relative to the tree root.
func (p *planner) fluxEdges(file string, edges map[string][]string) {
	data, err := os.ReadFile(file)
	if err != nil || !bytes.Contains(data, []byte("kustomize.toolkit.fluxcd.io/")) {
		return
	}
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var doc struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Spec       struct {
				Path string `yaml:"path"`
			} `yaml:"spec"`
		}
		if dec.Decode(&doc) != nil {
			return
		}
		if doc.Kind != "Kustomization" || !strings.HasPrefix(doc.APIVersion, "kustomize.toolkit.fluxcd.io/") {
			continue
		}
		rel, _ := filepath.Rel(p.root, file)
		from := fmt.Sprintf("flux:%s#%d", filepath.ToSlash(rel), i)
		edges[from] = append(edges[from], path.Clean(strings.TrimPrefix(doc.Spec.Path, "/")))
	}
}
