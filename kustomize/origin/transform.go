package origin

import (
	"fmt"

	"github.com/reflux-dev/reflux/kustomize"
)

// setNamespace is kustomize's NamespaceTransformer on namespaced objects,
// and on the subjects of (Cluster)RoleBindings.
func setNamespace(objs []*object, e *entry) {
	for _, o := range objs {
		setSubjectNamespaces(o, e)
		if clusterScoped[o.kind()] {
			continue
		}
		o.root.ensureMap("metadata").setScalar("namespace", e.value, e.layer)
		o.touch()
	}
}

// setSubjectNamespaces is the namespace transformer's roleBindingHack in
// kustomize api v0.21 (filters/namespace), in the defaultOnly mode the
// kustomization's namespace field and Flux's targetNamespace configure:
// every subject of a RoleBinding or ClusterRoleBinding (of any group)
// named "default", whatever its kind, gets the namespace, added or
// overwritten. Other subjects are left to name-reference fixing, which
// checker.subjectNamespace explains.
func setSubjectNamespaces(o *object, e *entry) {
	if k := o.kind(); k != "RoleBinding" && k != "ClusterRoleBinding" {
		return
	}
	subjects := o.root.get("subjects")
	if subjects == nil || subjects.kind != seqNode {
		return
	}
	for _, s := range subjects.items {
		if s.kind == mapNode && s.str("name") == "default" {
			s.setScalar("namespace", e.value, e.layer)
		}
	}
}

// prefixSkipped are the kinds kustomize's prefix/suffix transformers skip.
var prefixSkipped = map[string]bool{"CustomResourceDefinition": true, "APIService": true, "Namespace": true}

// addAffix applies namePrefix or nameSuffix to metadata.name.
func addAffix(objs []*object, e *entry, prefix bool) {
	for _, o := range objs {
		if prefixSkipped[o.kind()] {
			continue
		}
		md := o.root.ensureMap("metadata")
		name := md.str("name")
		if prefix {
			name = e.value + name
		} else {
			name += e.value
		}
		md.setScalar("name", name, e.layer)
		o.affixes = append(o.affixes, e.layer)
		o.touch()
	}
}

// setPairs writes key/value pairs into every map the specs reach.
func setPairs(objs []*object, pairs []kv, fss []fieldSpec) {
	for _, o := range objs {
		for _, fs := range fss {
			fs.visit(o, func(m *node) {
				for _, p := range pairs {
					m.setScalar(p.key, p.value, p.layer)
				}
			})
		}
	}
}

// applyLabels runs the labels entries, then commonLabels, as kustomize's
// LabelTransformer plugins are configured in that order.
func applyLabels(objs []*object, k *kfile) {
	for _, ls := range k.labels {
		fss := []fieldSpec{{path: "metadata/labels", create: true}}
		switch {
		case ls.includeSelectors:
			fss = append(append([]fieldSpec(nil), metadataLabelSpecs...), selectorLabelSpecs...)
		case ls.includeTemplates:
			fss = metadataLabelSpecs
		}
		setPairs(objs, ls.pairs, fss)
	}
	if len(k.commonLabels) > 0 {
		setPairs(objs, k.commonLabels, append(append([]fieldSpec(nil), metadataLabelSpecs...), selectorLabelSpecs...))
	}
}

// applyReplicas is kustomize's ReplicaCountTransformer.
func applyReplicas(objs []*object, specs []replicaSpec) {
	for _, r := range specs {
		for _, o := range objs {
			if !replicaKinds[o.kind()] || !o.hadName(r.name) {
				continue
			}
			o.root.ensureMap("spec").setScalar("replicas", r.count, r.layer)
		}
	}
}

func (o *object) hadName(name string) bool {
	for _, id := range o.ids {
		if id.name == name {
			return true
		}
	}
	return false
}

// applyImages is kustomize's ImageTagTransformer over every container list.
func applyImages(objs []*object, images []imageSpec) {
	for _, img := range images {
		for _, o := range objs {
			walkContainers(o.root, func(c *node) {
				if v := c.get("image"); v != nil && v.kind == scalarNode {
					if s, ok := v.value.(string); ok && kustomize.ImageMatches(s, img.name) {
						l := img.layer()
						c.set("image", overlay(v, newScalar(img.apply(s), l)))
					}
				}
			})
		}
	}
}

// layer is the images field that decides the rendered value: the version
// (digest, then newTag) when set, else newName.
func (img imageSpec) layer() Layer {
	for _, e := range []*entry{img.digest, img.newTag, img.newName} {
		if e != nil {
			return e.layer
		}
	}
	return Layer{Kind: KindImages}
}

func (img imageSpec) apply(s string) string {
	return kustomize.SetImage(s, img.newName.text(), img.newTag.text(), img.digest.text())
}

func walkContainers(n *node, fn func(c *node)) {
	if n == nil {
		return
	}
	for _, k := range n.keys {
		c := n.fields[k]
		if (k == "containers" || k == "initContainers") && c.kind == seqNode {
			for _, it := range c.items {
				fn(it)
			}
			continue
		}
		walkContainers(c, fn)
	}
	for _, it := range n.items {
		walkContainers(it, fn)
	}
}

// String helps debugging.
func (o *object) String() string {
	return fmt.Sprintf("%s/%s/%s", o.kind(), o.id().namespace, o.id().name)
}
