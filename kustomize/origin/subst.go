package origin

import (
	"strings"

	"github.com/fluxcd/pkg/envsubst"

	"github.com/reflux-dev/reflux/kustomize"
)

// varLayers returns, for each post-build variable, the layer where its
// value is defined, with kustomize.Variables' precedence.
func (b *builder) varLayers() map[string]Layer {
	out := map[string]Layer{}
	for _, src := range b.opts.SubstituteFrom {
		for k := range src.Data {
			out[k] = Layer{File: src.Kind + "/" + src.Name, Kind: KindSubstitution, Via: "spec.postBuild.substituteFrom", Variable: k}
		}
	}
	if ks := b.opts.Kustomization; ks != nil && ks.Spec.PostBuild != nil {
		for k := range ks.Spec.PostBuild.Substitute {
			l := Layer{Kind: KindSubstitution, Via: "spec.postBuild.substitute", Variable: k}
			if n := b.flux.node("postBuild", "substitute", k); n != nil {
				l.File, l.Line, l.Column = b.flux.k.path, n.Line, n.Column
			}
			b.flux.refuseWithoutFile(&l)
			l.Kind, l.Variable = KindSubstitution, k
			out[k] = l
		}
	}
	return out
}

// substitute models kustomize-controller's post-build substitution on
// every string scalar of every object not opted out.
func (b *builder) substitute(objs []*object) {
	ks := b.opts.Kustomization
	if ks == nil || ks.Spec.PostBuild == nil {
		return
	}
	vars := kustomize.Variables(b.opts)
	always := ks.Spec.PostBuild.SubstituteStrategy == "Always"
	if len(vars) == 0 && !always {
		return
	}
	layers := b.varLayers()
	for _, o := range objs {
		if disabled(o) {
			continue
		}
		walkScalars(o.root, func(n *node) {
			s, ok := n.value.(string)
			if !ok || !strings.Contains(s, "$") {
				return
			}
			substituteScalar(n, s, vars, layers)
		})
	}
}

func substituteScalar(n *node, s string, vars map[string]string, layers map[string]Layer) {
	var used []string
	out, err := envsubst.Eval(s, func(name string) (string, bool) {
		used = append(used, name)
		return vars[name], true
	})
	if err != nil || out == s {
		return
	}
	last := n.chain[len(n.chain)-1]
	for _, name := range used {
		l, ok := layers[name]
		if !ok || vars[name] == "" {
			// The variable is unset: a default in the source string wins.
			l = Layer{File: last.File, Line: last.Line, Column: last.Column, Kind: KindSubstitution, Variable: name, refused: last.refused}
		}
		if len(used) > 1 {
			l.refused = ReasonMultipleVariables
		}
		n.chain = append(n.chain, l)
	}
	n.value = out
	n.substituted = true
}

func disabled(o *object) bool {
	md := o.root.get("metadata")
	return md.str("labels", kustomize.SubstituteAnnotation) == "disabled" ||
		md.str("annotations", kustomize.SubstituteAnnotation) == "disabled"
}

func walkScalars(n *node, fn func(*node)) {
	if n == nil {
		return
	}
	switch n.kind {
	case scalarNode:
		fn(n)
	case mapNode:
		for _, k := range n.keys {
			walkScalars(n.fields[k], fn)
		}
	case seqNode:
		for _, it := range n.items {
			walkScalars(it, fn)
		}
	}
}
