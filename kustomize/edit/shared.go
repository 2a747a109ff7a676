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
	if p.fanInOf(position{file: o.File, line: o.Line, col: o.Column}) > 1 {
		return true
	}
	return p.entryPoints(path.Dir(o.File)) > 1
}

// fanInOf counts the rendered objects that take a value from pos. The
// counts are taken once per set: on a large tree a pass over every field
// of every object per change would add up.
func (d *draft) fanInOf(pos position) int {
	if d.fanIn != nil {
		return d.fanIn[pos]
	}
	d.fanIn = map[position]int{}
	for _, ref := range d.idx.Objects() {
		fields, err := d.idx.Fields(ref)
		if err != nil {
			continue // Objects lists only what the index holds
		}
		seen := map[position]bool{}
		for _, f := range fields {
			at := position{file: f.Origin.File, line: f.Origin.Line, col: f.Origin.Column}
			if f.Refused == "" && !seen[at] {
				seen[at] = true
				d.fanIn[at]++
			}
		}
	}
	return d.fanIn[pos]
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
// spec.path: two clusters building the same directory share it. The tree
// is walked once per set.
func (d *draft) kustomizationGraph() map[string][]string {
	if d.graph == nil {
		d.graph = d.walkGraph()
	}
	return d.graph
}

func (d *draft) walkGraph() map[string][]string {
	edges := map[string][]string{}
	_ = filepath.WalkDir(d.root, func(file string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() && de.Name() == ".git" {
			return filepath.SkipDir
		}
		switch de.Name() {
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
		default:
			if ext := filepath.Ext(file); ext == ".yaml" || ext == ".yml" {
				d.fluxEdges(file, edges)
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
		rel, _ := filepath.Rel(d.root, filepath.Dir(file))
		from := filepath.ToSlash(rel)
		edges[from] = append(edges[from], []string{}...)
		for _, r := range append(k.Resources, k.Components...) {
			to := path.Join(from, r)
			if st, err := os.Stat(filepath.Join(d.root, to)); err == nil && st.IsDir() && !strings.HasPrefix(to, "..") {
				edges[from] = append(edges[from], to)
			}
		}
		return nil
	})
	return edges
}

// fluxEdges adds an edge from every Flux Kustomization document in file to
// the directory its spec.path names, relative to the tree root.
func (d *draft) fluxEdges(file string, edges map[string][]string) {
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
		rel, _ := filepath.Rel(d.root, file)
		from := fmt.Sprintf("flux:%s#%d", filepath.ToSlash(rel), i)
		edges[from] = append(edges[from], path.Clean(strings.TrimPrefix(doc.Spec.Path, "/")))
	}
}
