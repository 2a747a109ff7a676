package origin

import (
	"fmt"
	"os"
	"path"
	"path/filepath"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// fluxSpec locates the fields of the Flux Kustomization's spec in the file
// that declares it, so values it sets get a kustomization-spec origin.
type fluxSpec struct {
	k    *kfile // the declaring file, as a holder for positions
	spec *yaml.Node
}

// loadFluxSpec parses BuildOptions.KustomizationFile, or marshals the
// Kustomization when no file is given; then positions are refused.
func loadFluxSpec(b *builder) (*fluxSpec, error) {
	ks := b.opts.Kustomization
	if ks == nil {
		return &fluxSpec{k: &kfile{}}, nil
	}
	file, data := b.opts.KustomizationFile, []byte(nil)
	var err error
	if file != "" {
		if !filepath.IsAbs(file) {
			file = filepath.Join(b.root, file)
		}
		if data, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("reading Flux Kustomization: %w", err)
		}
		if rel, err := filepath.Rel(b.root, file); err == nil {
			file = filepath.ToSlash(rel)
		}
	} else if data, err = sigsyaml.Marshal(ks); err != nil {
		return nil, err
	}
	docs, err := parseDocs(data)
	if err != nil {
		return nil, fmt.Errorf("parsing Flux Kustomization %s: %w", file, err)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("parsing Flux Kustomization %s: empty", file)
	}
	doc := fluxDoc(docs, ks.Namespace, ks.Name)
	if doc == nil {
		return nil, fmt.Errorf("parsing Flux Kustomization %s: no Kustomization %s/%s in it", file, ks.Namespace, ks.Name)
	}
	fs := &fluxSpec{k: &kfile{path: file, data: data}, spec: mapValue(doc, "spec")}
	if b.opts.KustomizationFile == "" {
		fs.k.path = ""
	}
	return fs, nil
}

func (f *fluxSpec) node(keys ...string) *yaml.Node {
	n := f.spec
	for _, k := range keys {
		n = mapValue(n, k)
	}
	return n
}

func (f *fluxSpec) entry(key string) *entry {
	n := f.node(key)
	if n == nil || n.Value == "" {
		return nil
	}
	e := f.k.entryAt(n, KindKustomizationSpec, "spec."+key)
	f.refuseWithoutFile(&e.layer)
	return e
}

func (f *fluxSpec) refuseWithoutFile(l *Layer) {
	if f.k.path == "" {
		*l = Layer{Kind: KindKustomizationSpec, Via: l.Via, refused: ReasonNoKustomizationFile}
	}
}

// overlay applies the spec to the top kustomization the way Flux's
// generator rewrites kustomization.yaml.
func (f *fluxSpec) overlay(b *builder, top *kfile) error {
	if f.spec == nil {
		return nil
	}
	if e := f.entry("targetNamespace"); e != nil {
		top.namespace = e
	}
	if e := f.entry("namePrefix"); e != nil {
		top.namePrefix = e
	}
	if e := f.entry("nameSuffix"); e != nil {
		top.nameSuffix = e
	}
	if n := f.node("patches"); n != nil {
		holder := *f.k
		holder.dir = top.dir
		ps, err := b.parsePatches(&holder, n, KindKustomizationSpec, "spec.patches", false)
		if err != nil {
			return err
		}
		top.patches = append(top.patches, ps...)
	}
	ignoreMissing := b.opts.Kustomization.Spec.IgnoreMissingComponents
	for _, c := range b.opts.Kustomization.Spec.Components {
		if _, err := os.Stat(b.abs(path.Join(top.dir, c))); err != nil && ignoreMissing {
			continue
		}
		top.components = append(top.components, c)
	}
	if n := f.node("images"); n != nil {
		top.images = mergeImages(top.images, f.k.parseImages(n, KindKustomizationSpec, "spec.images"))
	}
	return nil
}

// mergeImages merges the spec's images into the kustomization's, field by
// field, as fluxcd/pkg/kustomize's generator does: newTag and digest are
// one unit, so setting either clears the other.
func mergeImages(base, spec []imageSpec) []imageSpec {
	for _, img := range spec {
		i := -1
		for j := range base {
			if base[j].name == img.name {
				i = j
				break
			}
		}
		if i < 0 {
			base = append(base, img)
			continue
		}
		if img.newName != nil {
			base[i].newName = img.newName
		}
		if img.newTag != nil || img.digest != nil {
			base[i].newTag, base[i].digest = img.newTag, img.digest
		}
	}
	return base
}

// commonMetadata mirrors ssautil.SetCommonMetadata run before apply.
func (f *fluxSpec) commonMetadata(objs []*object) {
	for _, field := range []string{"labels", "annotations"} {
		n := f.node("commonMetadata", field)
		if n == nil {
			continue
		}
		pairs := f.k.pairs(n, KindKustomizationSpec, "spec.commonMetadata."+field)
		for i := range pairs {
			f.refuseWithoutFile(&pairs[i].layer)
		}
		setPairs(objs, pairs, []fieldSpec{{path: "metadata/" + field, create: true}})
	}
}

// fluxDoc finds the document of the Flux Kustomization namespace/name in a
// file that may declare several (a cluster repository's layout), so a later
// one's spec.patches map to their own lines, not the first one's.
func fluxDoc(docs []*yaml.Node, namespace, name string) *yaml.Node {
	if len(docs) == 1 {
		return docs[0]
	}
	for _, d := range docs {
		md := mapValue(d, "metadata")
		if scalar(mapValue(d, "kind")) != "Kustomization" || scalar(mapValue(md, "name")) != name {
			continue
		}
		if ns := scalar(mapValue(md, "namespace")); ns == namespace || namespace == "" {
			return d
		}
	}
	return nil
}

func scalar(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	return n.Value
}
