package origin

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// checker compares the model with krusty's render, field by field.
type checker struct {
	b       *builder
	byID    map[ObjectRef]*object
	renamed map[string][]*object // any historical name -> objects
	failed  bool
	// rendered holds the rendered name of each matched model object.
	rendered map[*object]string
}

func modelRef(o *object) ObjectRef {
	return ObjectRef{Group: o.group(), Kind: o.kind(), Namespace: o.id().namespace, Name: o.id().name}
}

func newChecker(b *builder, objs []*object, failed bool) *checker {
	c := &checker{b: b, byID: map[ObjectRef]*object{}, renamed: map[string][]*object{}, failed: failed, rendered: map[*object]string{}}
	for _, o := range objs {
		c.byID[modelRef(o)] = o
		for _, id := range o.ids {
			c.renamed[id.name] = append(c.renamed[id.name], o)
		}
	}
	return c
}

// match finds the model object of a rendered one, stripping a generator's
// hash suffix when the model says the object is hashed.
func (c *checker) match(u *unstructured.Unstructured) (*object, []ObjectRef) {
	ref := RefOf(u)
	if o := c.byID[ref]; o != nil && !o.hashed {
		return o, nil
	}
	if i := strings.LastIndex(ref.Name, "-"); i > 0 && len(ref.Name)-i-1 == 10 {
		alias := ref
		alias.Name = ref.Name[:i]
		if o := c.byID[alias]; o != nil && o.hashed {
			return o, []ObjectRef{alias}
		}
	}
	return nil, nil
}

func (c *checker) check(u *unstructured.Unstructured) *objectIndex {
	oi := &objectIndex{ref: RefOf(u), byPtr: map[string]int{}}
	o, aliases := c.match(u)
	oi.aliases = aliases
	if o != nil {
		c.rendered[o] = u.GetName()
		oi.refused, oi.edit = o.refused, o.refusedEdit()
	}
	var root *node
	if o != nil {
		root = o.root
	}
	w := walker{c: c, o: o, oi: oi}
	w.walk("", u.Object, root, "")
	return oi
}

// fallbackObject is the reason for the fields of an object the model
// lacks: remote bases and Helm charts add whole objects.
func (c *checker) fallbackObject() Reason {
	for _, f := range []Reason{ReasonRemoteBase, ReasonHelmChart} {
		if !c.failed && c.b.features[f] {
			return f
		}
	}
	return c.fallback(ReasonNotInModel)
}

// fallback is the reason for a field the model lacks or gets wrong: the
// first unmodelled feature in the build that can change a field of an
// object, else the given reason.
func (c *checker) fallback(r Reason) Reason {
	if c.failed {
		return ReasonModelFailed
	}
	for _, f := range []Reason{ReasonPlugin, ReasonTransformerConfig, ReasonReplacements, ReasonBuildMetadata} {
		if c.b.features[f] {
			return f
		}
	}
	return r
}

type walker struct {
	c  *checker
	o  *object
	oi *objectIndex
}

func (w *walker) walk(ptr string, rv interface{}, mn *node, field string) {
	switch v := rv.(type) {
	case map[string]interface{}:
		for _, k := range sortedKeys(v) {
			var child *node
			if mn != nil && mn.kind == mapNode {
				child = mn.get(k)
			}
			w.walk(jsonptr.Append(ptr, k), v[k], child, k)
		}
	case []interface{}:
		key := ""
		if mn != nil && mn.kind == seqNode {
			key = mergeKey(field, mn)
		}
		for i, it := range v {
			w.walk(jsonptr.Append(ptr, strconv.Itoa(i)), it, itemFor(mn, key, it, i), "")
		}
	default:
		w.leaf(ptr, v, mn)
	}
}

// itemFor finds the model element of a rendered list element: by merge key
// when the list has one, because overlays reorder and patch lists.
func itemFor(mn *node, key string, it interface{}, i int) *node {
	if mn == nil || mn.kind != seqNode {
		return nil
	}
	if m, ok := it.(map[string]interface{}); ok && key != "" && uniqueKey(mn, key, m[key]) {
		if j := findItem(mn, key, m[key]); j >= 0 {
			return mn.items[j]
		}
		// The key itself may have been rewritten (a renamed subject);
		// fall back to the position, which the value check then guards.
	}
	if i < len(mn.items) {
		return mn.items[i]
	}
	return nil
}

// uniqueKey reports whether at most one element of the model list has v
// under key. Two subjects named default are told apart by position, not
// both found at the first.
func uniqueKey(mn *node, key string, v interface{}) bool {
	n := 0
	for _, it := range mn.items {
		if k := it.get(key); k != nil && fmt.Sprint(k.value) == fmt.Sprint(v) {
			n++
		}
	}
	return n <= 1
}

func (w *walker) leaf(ptr string, v interface{}, mn *node) {
	f := Field{Pointer: ptr, Value: v}
	switch {
	case w.o == nil:
		f.Refused = w.c.fallbackObject()
	case w.o.refused != "":
		f.Refused, f.Edit = w.o.refused, w.o.refusedEdit()
	case isSubjectNamespace(ptr) && (mn == nil || mn.kind == scalarNode && !sameValue(mn, v)):
		f.Origin, f.Refused = w.subjectNamespace(ptr, v, mn)
	case mn == nil || mn.kind != scalarNode:
		f.Refused = w.c.fallback(ReasonNotInModel)
	case sameValue(mn, v):
		f.Origin, f.Refused = originOf(mn.chain)
	default:
		f.Origin, f.Refused, f.Edit = w.renamedRef(mn, v)
	}
	if f.Refused == ReasonNotInModel && w.c.b.originAnnotations && ptr == originAnnotationPtr {
		f.Refused = ReasonBuildMetadata
	}
	if f.Refused != "" && f.Edit == nil {
		f.Edit = w.c.b.site(f.Refused)
	}
	w.oi.byPtr[ptr] = len(w.oi.fields)
	w.oi.fields = append(w.oi.fields, f)
}

// renamedRef explains a string krusty rewrote as a name reference to an
// object renamed by namePrefix/nameSuffix (mapped) or a hash (refused).
func (w *walker) renamedRef(mn *node, v interface{}) (Origin, Reason, *Layer) {
	s, ok1 := v.(string)
	old, ok2 := mn.value.(string)
	if ok1 && ok2 {
		for _, target := range w.c.renamed[old] {
			if w.c.rendered[target] != s && !(target.hashed && strings.HasPrefix(s, target.id().name+"-")) {
				continue
			}
			if target.hashed {
				return Origin{}, ReasonHashSuffix, generatorName(target)
			}
			chain := append([]Layer(nil), mn.chain...)
			for _, a := range target.affixes {
				if !containsLayer(chain, a) {
					chain = append(chain, a)
				}
			}
			o, r := originOf(chain)
			return o, r, nil
		}
	}
	return Origin{}, w.c.fallback(ReasonModelDisagrees), nil
}

// originAnnotationPtr is the annotation buildMetadata: [originAnnotations]
// makes krusty add.
const originAnnotationPtr = "/metadata/annotations/config.kubernetes.io~1origin"

// generatorName is the name: line of the generator that made a hashed
// object: the kustomize declaration behind its rendered name.
func generatorName(o *object) *Layer {
	n := o.root.get("metadata").get("name")
	if n == nil || n.kind != scalarNode || len(n.chain) == 0 || n.chain[0].File == "" {
		return nil
	}
	l := n.chain[0]
	l.refused = ""
	return &l
}

func containsLayer(chain []Layer, l Layer) bool {
	for _, c := range chain {
		if c == l {
			return true
		}
	}
	return false
}

// originOf returns the origin a chain ends in, or the reason it is refused.
func originOf(chain []Layer) (Origin, Reason) {
	last := chain[len(chain)-1]
	if last.refused != "" {
		return Origin{}, last.refused
	}
	if last.File == "" && last.Kind == KindKustomizationSpec {
		return Origin{}, ReasonNoKustomizationFile
	}
	return Origin{File: last.File, Line: last.Line, Column: last.Column, Kind: last.Kind, Variable: last.Variable, Chain: append([]Layer(nil), chain...)}, ""
}

// sameValue compares a model scalar with a rendered one. Numbers compare by
// value; a substituted string may have been re-typed by the YAML round trip.
func sameValue(mn *node, v interface{}) bool {
	if jsonptr.Equal(mn.value, v) {
		return true
	}
	if mn.substituted {
		return fmt.Sprint(mn.value) == fmt.Sprint(v)
	}
	return false
}

// isSubjectNamespace reports whether ptr is /subjects/N/namespace.
func isSubjectNamespace(ptr string) bool {
	parts := strings.Split(ptr, "/")
	return len(parts) == 4 && parts[1] == "subjects" && parts[3] == "namespace"
}

// subjectNamespace explains the namespace kustomize's name-reference fixing
// writes into a (Cluster)RoleBinding subject of kind ServiceAccount: the
// namespace of the ServiceAccount it names, so the origin is that object's
// namespace. written is the subject's own namespace node, nil when it has
// none: the account is then looked up by name alone, else it must have
// been in that namespace first or now (kustomize api v0.21,
// filters/nameref, filterMapCandidatesByNamespace), and it must be the
// only such account in the rendered namespace v, or the field is refused.
func (w *walker) subjectNamespace(ptr string, v interface{}, written *node) (Origin, Reason) {
	fallback := ReasonNotInModel
	if written != nil {
		fallback = ReasonModelDisagrees
	}
	subjects := w.o.root.get("subjects")
	i, err := strconv.Atoi(strings.Split(ptr, "/")[2])
	if err != nil || subjects == nil || i >= len(subjects.items) {
		return Origin{}, w.c.fallback(fallback)
	}
	subj := subjects.items[i]
	if subj.str("kind") != "ServiceAccount" {
		return Origin{}, w.c.fallback(fallback)
	}
	seen := map[*object]bool{}
	var found []*node
	for _, sa := range w.c.renamed[subj.str("name")] {
		if seen[sa] || sa.kind() != "ServiceAccount" || sa.id().namespace != v {
			continue
		}
		seen[sa] = true
		if written != nil {
			old := fmt.Sprint(written.value)
			if !sameNamespace(sa.ids[0].namespace, old) && !sameNamespace(sa.id().namespace, old) {
				continue
			}
		}
		if ns := sa.root.get("metadata").get("namespace"); ns != nil && ns.kind == scalarNode {
			found = append(found, ns)
		}
	}
	if len(found) != 1 {
		return Origin{}, w.c.fallback(fallback)
	}
	return originOf(found[0].chain)
}
