package origin

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// objectID is one identity an object had during the build.
type objectID struct {
	name, namespace string
}

// object is one modelled resource.
type object struct {
	root *node
	// ids holds every name/namespace the object had, oldest first; kustomize
	// matches patches and replicas against any of them.
	ids []objectID
	// hashed marks generated objects that will get a hash suffix.
	hashed bool
	// generated marks objects produced by a configMap/secret generator.
	generated bool
	// refused applies to every field of the object (e.g. SOPS), and
	// refusedAt, when set, is what to edit instead.
	refused   Reason
	refusedAt *Layer
	// affixes are the name-affix layers applied to metadata.name, used to
	// explain name references krusty rewrote.
	affixes []Layer
}

func newObject(root *node) *object {
	o := &object{root: root}
	o.ids = append(o.ids, o.id())
	if root.get("sops") != nil {
		o.refused = ReasonSOPS
	}
	return o
}

// refusedEdit is a copy of what to edit instead of a refused object, or
// nil.
func (o *object) refusedEdit() *Layer {
	if o.refusedAt == nil {
		return nil
	}
	l := *o.refusedAt
	return &l
}

func (o *object) id() objectID {
	return objectID{name: o.root.str("metadata", "name"), namespace: o.root.str("metadata", "namespace")}
}

// touch records the object's current identity after a rename.
func (o *object) touch() {
	if id := o.id(); id != o.ids[len(o.ids)-1] {
		o.ids = append(o.ids, id)
	}
}

func (o *object) kind() string { return o.root.str("kind") }

func (o *object) group() string {
	gv := o.root.str("apiVersion")
	if i := strings.Index(gv, "/"); i >= 0 {
		return gv[:i]
	}
	return ""
}

func (o *object) version() string {
	gv := o.root.str("apiVersion")
	return gv[strings.Index(gv, "/")+1:]
}

// sameNamespace compares namespaces the way kustomize's ResId does: empty
// and "default" are the same.
func sameNamespace(a, b string) bool {
	if a == "" {
		a = "default"
	}
	if b == "" {
		b = "default"
	}
	return a == b
}

// matchesPatch reports whether an untargeted strategic-merge patch applies.
func (o *object) matchesPatch(p *node) bool {
	if p.str("kind") != o.kind() {
		return false
	}
	if gv := p.str("apiVersion"); gv != "" {
		g := ""
		if i := strings.Index(gv, "/"); i >= 0 {
			g = gv[:i]
		}
		if g != o.group() {
			return false
		}
	}
	name, ns := p.str("metadata", "name"), p.str("metadata", "namespace")
	for _, id := range o.ids {
		if id.name == name && sameNamespace(id.namespace, ns) {
			return true
		}
	}
	return false
}

// matches reports whether the target selector picks the object. Name and
// namespace are anchored regular expressions, as in kustomize.
func (s *selector) matches(o *object) (bool, error) {
	if s.kind != "" && !anchored(s.kind, o.kind()) ||
		s.group != "" && !anchored(s.group, o.group()) ||
		s.version != "" && !anchored(s.version, o.version()) {
		return false, nil
	}
	if s.name != "" || s.namespace != "" {
		found := false
		for _, id := range o.ids {
			if (s.name == "" || anchored(s.name, id.name)) && (s.namespace == "" || anchored(s.namespace, id.namespace)) {
				found = true
			}
		}
		if !found {
			return false, nil
		}
	}
	ok, err := matchLabels(s.labelSelector, o.root.get("metadata").get("labels"))
	if err != nil || !ok {
		return ok, err
	}
	return matchLabels(s.annotationSelector, o.root.get("metadata").get("annotations"))
}

func anchored(pattern, s string) bool {
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	if err != nil {
		return pattern == s
	}
	return re.MatchString(s)
}

func matchLabels(sel string, m *node) (bool, error) {
	if sel == "" {
		return true, nil
	}
	ls, err := labels.Parse(sel)
	if err != nil {
		return false, fmt.Errorf("parsing selector %q: %w", sel, err)
	}
	set := labels.Set{}
	if m != nil {
		for _, k := range m.keys {
			set[k] = fmt.Sprint(m.fields[k].value)
		}
	}
	return ls.Matches(set), nil
}
