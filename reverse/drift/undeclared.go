package drift

import (
	"sort"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// added is one field live has and Flux does not declare.
type added struct {
	change
	modifier *refluxv1.Modifier
}

// undeclared finds the fields live has that Flux does not declare (the
// dry-run result's Apply entry for the field owner), written by a manager
// outside the allow-list. A new list element is one field (a new env var is
// not one field per leaf); maps and structs are reported key by key, so a
// first annotation is /metadata/annotations/<key>, not the whole map.
//
// Flux reverts such a field only if every owner is a manager it strips
// before applying: it folds them into its own entry, and its apply then
// deletes what it does not declare. A field another manager shares survives.
func (d *Detector) undeclared(live, src map[string]any, entries []entry, declared *fieldpath.Set, cleanup bool) []added {
	tops := map[string]fieldpath.Path{}
	for _, e := range entries {
		if d.allowed(e) || e.Subresource == "status" {
			continue
		}
		e.set.Iterate(func(p fieldpath.Path) {
			if q := topmost(p, declared); q != nil {
				tops[q.String()] = q
			}
		})
	}
	var out []added
	for _, q := range deepest(tops) {
		ptr, val, ok := resolve(live, q)
		if !ok || jsonptr.Under(ptr, "/status") || bookkeeping[ptr] {
			continue
		}
		var owners []int
		reverts := cleanup
		for i, e := range entries {
			if d.opts.isFlux(e.ManagedFieldsEntry) || !touches(e.set, q) {
				continue
			}
			owners = append(owners, i)
			reverts = reverts && d.opts.stripped(e.ManagedFieldsEntry)
		}
		out = append(out, added{
			change: change{
				pointer: ptr, gitPointer: gitPointer(src, q), typ: refluxv1.ChangeAdd, live: val, reverts: reverts,
			},
			modifier: d.modifier(entries, owners),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pointer < out[j].pointer })
	return out
}

// topmost returns the shortest prefix of p that the declared set neither
// owns nor owns anything below, extended through field names down to the
// first list element or to p itself; nil if p is declared.
func topmost(p fieldpath.Path, declared *fieldpath.Set) fieldpath.Path {
	for n := 1; n <= len(p); n++ {
		if touches(declared, p[:n]) {
			continue
		}
		for n < len(p) && p[n-1].FieldName != nil {
			n++
		}
		return p[:n].Copy()
	}
	return nil
}

// deepest drops every path that is a prefix of another: a map or list
// is a member of its writer's set as well as its keys, and the keys are
// what drifted.
func deepest(tops map[string]fieldpath.Path) []fieldpath.Path {
	prefixes := map[string]bool{}
	for _, q := range tops {
		for n := 1; n < len(q); n++ {
			prefixes[q[:n].String()] = true
		}
	}
	out := make([]fieldpath.Path, 0, len(tops))
	for s, q := range tops {
		if !prefixes[s] {
			out = append(out, q)
		}
	}
	return out
}

// gitPointer places a field live added in the rendered object: as far as
// Git has the path, its own indices; past that, field names as they are
// and "-" (RFC 6902's end of the list) for a list element Git lacks.
func gitPointer(src map[string]any, q fieldpath.Path) string {
	var b strings.Builder
	var cur any = src
	for n, pe := range q {
		next, token, ok := step(cur, pe)
		if !ok {
			for _, rest := range q[n:] {
				b.WriteByte('/')
				if rest.FieldName != nil {
					b.WriteString(jsonptr.Escape(*rest.FieldName))
				} else {
					b.WriteByte('-')
				}
			}
			break
		}
		b.WriteByte('/')
		b.WriteString(token)
		cur = next
	}
	return b.String()
}
