package origin

import (
	"os"
	"path"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// transformerConfig is the part of a kustomize transformer configuration
// (a configurations: file) the model obeys: the namespace field specs,
// which kubebuilder's scaffolding, for one, uses to point a CRD's
// conversion webhook and a webhook configuration at the Service in the
// namespace the overlay sets. Its other sections stay unmodelled: a field
// they change disagrees with the model and is refused as
// transformer-config.
type transformerConfig struct {
	Namespace []configFieldSpec `json:"namespace"`
}

// configFieldSpec is a FieldSpec as a configurations file spells it.
type configFieldSpec struct {
	Group  string `json:"group"`
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Create bool   `json:"create"`
}

// configurations reads the namespace field specs of the files the
// configurations entry v lists. A file that cannot be read or parsed adds
// nothing: kustomize fails the build on it, and the build says why.
func (k *kfile) configurations(b *builder, v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		return
	}
	for _, it := range v.Content {
		data, err := os.ReadFile(b.abs(path.Join(k.dir, it.Value)))
		if err != nil {
			continue
		}
		var tc transformerConfig
		if err := sigsyaml.Unmarshal(data, &tc); err != nil {
			continue
		}
		for _, fs := range tc.Namespace {
			if fs.Path != "" {
				k.nsSpecs = append(k.nsSpecs, fieldSpec{group: fs.Group, kind: fs.Kind, path: fs.Path, create: fs.Create})
			}
		}
	}
}

// builtinNamespaceSpecs are the namespace transformer's own field specs
// besides metadata/namespace (kustomize api v0.21,
// konfig/builtinpluginconsts/namespace.go): a Namespace object takes the
// namespace as its name, and an APIService and a CRD's conversion webhook
// point at a Service in it. Without the first, the model kept a Namespace
// under its old name, found no such object in the render and refused
// every field of it.
var builtinNamespaceSpecs = specs(
	"- Namespace metadata/name true",
	"apiregistration.k8s.io APIService spec/service/namespace true",
	"apiextensions.k8s.io CustomResourceDefinition spec/conversion/webhook/clientConfig/service/namespace false",
)

// setConfiguredNamespaces sets the namespace at the paths of the namespace
// transformer's field specs other than metadata/namespace: its built-in
// ones and those configurations added. Unlike metadata/namespace, they
// apply to cluster-scoped kinds (a CRD, a Namespace), as kustomize applies
// them to whatever kind the spec names. A path crosses a list wherever it
// meets one, as kustomize's field specs do.
func setConfiguredNamespaces(objs []*object, specs []fieldSpec, e *entry) {
	for _, o := range objs {
		for _, fs := range specs {
			if !fs.applies(o) {
				continue
			}
			setAtSpec(o.root, splitSpecPath(fs.path), fs.create, e)
			o.touch()
		}
	}
}

// setAtSpec sets the leaf of path under n to e's value, where it exists or
// create allows.
func setAtSpec(n *node, segs []string, create bool, e *entry) {
	if n == nil || len(segs) == 0 {
		return
	}
	switch n.kind {
	case seqNode:
		for _, it := range n.items {
			setAtSpec(it, segs, create, e)
		}
		return
	case mapNode:
	default:
		return
	}
	if len(segs) == 1 {
		if n.get(segs[0]) != nil || create {
			n.setScalar(segs[0], e.value, e.layer)
		}
		return
	}
	c := n.get(segs[0])
	if c == nil {
		if !create {
			return
		}
		c = n.ensureMap(segs[0])
	}
	setAtSpec(c, segs[1:], create, e)
}

// splitSpecPath splits a field spec's path into its keys. A "[]" some
// writers put after a list's key is dropped: lists are crossed anyway.
func splitSpecPath(p string) []string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = strings.TrimSuffix(s, "[]")
	}
	return segs
}
