package drift

import (
	"encoding/json"
	"reflect"
	"sort"
	"strconv"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// change is one drifted field before its values are masked and encoded.
type change struct {
	pointer string
	typ     refluxv1.ChangeType
	git     any
	live    any
	reverts bool
}

// listKeys maps a list's path, with every list index written "*", to the
// names of the fields that key its elements. The schema is not at hand
// (fetching it would cost requests), but every keyed element anyone owns
// appears in managedFields as k:{"name":...}, which names the keys.
type listKeys map[string][]string

func (k listKeys) add(entries []entry) {
	for _, e := range entries {
		e.set.Iterate(func(p fieldpath.Path) {
			abs := ""
			for _, pe := range p {
				switch {
				case pe.FieldName != nil:
					abs = join(abs, *pe.FieldName)
					continue
				case pe.Key != nil && k[abs] == nil:
					names := make([]string, 0, len(*pe.Key))
					for _, f := range *pe.Key {
						names = append(names, f.Name)
					}
					k[abs] = names
				}
				abs += "/*"
			}
		})
	}
}

// differ compares the live object with Flux's dry-run result.
//
// fluxcd/pkg/ssa compares them with jsondiff, which pairs list elements by
// index. Server-side apply puts the elements Git declares in Git's order, so
// a list someone reordered live would differ everywhere; the differ pairs
// keyed elements by key instead, and points at their live index.
type differ struct {
	keys listKeys
	out  []change
}

func (d *differ) emit(ptr string, typ refluxv1.ChangeType, git, live any) {
	d.out = append(d.out, change{pointer: ptr, typ: typ, git: git, live: live, reverts: true})
}

// walk compares one live value with the value Flux would leave there.
func (d *differ) walk(ptr, abs string, live, git any) {
	switch l := live.(type) {
	case map[string]any:
		if g, ok := git.(map[string]any); ok {
			d.maps(ptr, abs, l, g)
			return
		}
	case []any:
		if g, ok := git.([]any); ok {
			d.lists(ptr, abs, l, g)
			return
		}
	}
	if !equal(live, git) {
		d.emit(ptr, refluxv1.ChangeUpdate, git, live)
	}
}

func (d *differ) maps(ptr, abs string, live, git map[string]any) {
	keys := make([]string, 0, len(live)+len(git))
	for k := range live {
		keys = append(keys, k)
	}
	for k := range git {
		if _, ok := live[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		lv, lok := live[k]
		gv, gok := git[k]
		switch {
		case !gok:
			d.emit(join(ptr, k), refluxv1.ChangeAdd, nil, lv)
		case !lok:
			d.emit(join(ptr, k), refluxv1.ChangeRemove, gv, nil)
		default:
			d.walk(join(ptr, k), join(abs, k), lv, gv)
		}
	}
}

func (d *differ) lists(ptr, abs string, live, git []any) {
	if names := d.keys[abs]; len(names) > 0 {
		if gi, ok := keyIndex(git, names); ok {
			if _, ok := keyIndex(live, names); ok {
				d.keyed(ptr, abs, live, git, names, gi)
				return
			}
		}
	}
	n := min(len(live), len(git))
	for i := range n {
		d.walk(join(ptr, itoa(i)), abs+"/*", live[i], git[i])
	}
	for i := n; i < len(live); i++ {
		d.emit(join(ptr, itoa(i)), refluxv1.ChangeAdd, nil, live[i])
	}
	for i := n; i < len(git); i++ {
		d.emit(join(ptr, itoa(i)), refluxv1.ChangeRemove, git[i], nil)
	}
}

// keyed pairs elements by key. An element Git declares and live lacks is
// pointed at by its index in the dry-run (Git-ordered) list.
func (d *differ) keyed(ptr, abs string, live, git []any, names []string, gi map[string]int) {
	matched := make([]bool, len(git))
	for i, item := range live {
		j, ok := gi[elementKey(item, names)]
		if !ok || matched[j] {
			d.emit(join(ptr, itoa(i)), refluxv1.ChangeAdd, nil, item)
			continue
		}
		matched[j] = true
		d.walk(join(ptr, itoa(i)), abs+"/*", item, git[j])
	}
	for j, ok := range matched {
		if !ok {
			d.emit(join(ptr, itoa(j)), refluxv1.ChangeRemove, git[j], nil)
		}
	}
}

// keyIndex maps each element's key to its first index; ok is false unless
// every element is an object.
func keyIndex(list []any, names []string) (map[string]int, bool) {
	idx := make(map[string]int, len(list))
	for i, item := range list {
		if _, ok := item.(map[string]any); !ok {
			return nil, false
		}
		if _, dup := idx[elementKey(item, names)]; !dup {
			idx[elementKey(item, names)] = i
		}
	}
	return idx, true
}

func elementKey(item any, names []string) string {
	m, _ := item.(map[string]any)
	vals := make([]any, len(names))
	for i, n := range names {
		vals[i] = m[n]
	}
	b, _ := json.Marshal(vals)
	return string(b)
}

// equal compares decoded JSON values, treating numbers by value: the same
// integer may arrive as int64 from one decoder and float64 from another.
func equal(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func itoa(i int) string { return strconv.Itoa(i) }
