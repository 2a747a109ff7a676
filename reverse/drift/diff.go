package drift

import (
	"encoding/json"
	"sort"
	"strconv"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// change is one drifted field before its values are masked and encoded.
type change struct {
	pointer    string
	gitPointer string
	typ        refluxv1.ChangeType
	git        any
	live       any
	reverts    bool
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
					abs = jsonptr.Append(abs, *pe.FieldName)
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

// differ compares the live object with Flux's dry-run result ("merged"),
// and reads Git's own values from the rendered object ("src").
//
// fluxcd/pkg/ssa compares with jsondiff, which pairs list elements by
// index. Server-side apply puts the elements Git declares in Git's order, so
// a list someone reordered live would differ everywhere; the differ pairs
// keyed elements by key instead, and points at their live index.
//
// Git values are taken from the rendered object where it has them, so they
// read as Git wrote them, without the defaults the dry run and Flux's
// normalisation fill in; the merged value is the fallback.
type differ struct {
	keys listKeys
	out  []change
}

// loc is where the differ is: the pointer in live, the pointer in Git (the
// rendered object), and the list-key path (list indices written "*").
type loc struct{ live, git, abs string }

func (l loc) field(k string) loc {
	return loc{live: jsonptr.Append(l.live, k), git: jsonptr.Append(l.git, k), abs: jsonptr.Append(l.abs, k)}
}

// elem descends into a list element: its live index, and its Git index or
// "-" (RFC 6902's end of the list) when Git does not have it.
func (l loc) elem(liveIdx int, gitIdx string) loc {
	return loc{live: jsonptr.Append(l.live, itoa(liveIdx)), git: jsonptr.Append(l.git, gitIdx), abs: l.abs + "/*"}
}

func (d *differ) emit(at loc, typ refluxv1.ChangeType, git, live any) {
	d.out = append(d.out, change{pointer: at.live, gitPointer: at.git, typ: typ, git: git, live: live, reverts: true})
}

// walk compares one live value with the value Flux would leave there.
func (d *differ) walk(at loc, live, merged, src any) {
	switch l := live.(type) {
	case map[string]any:
		if m, ok := merged.(map[string]any); ok {
			s, _ := src.(map[string]any)
			d.maps(at, l, m, s)
			return
		}
	case []any:
		if m, ok := merged.([]any); ok {
			s, _ := src.([]any)
			d.lists(at, l, m, s)
			return
		}
	}
	if !jsonptr.Equal(live, merged) {
		d.emit(at, refluxv1.ChangeUpdate, prefer(src, merged), live)
	}
}

// prefer returns Git's own value when the rendered object has one.
func prefer(src, merged any) any {
	if src != nil {
		return src
	}
	return merged
}

func (d *differ) maps(at loc, live, merged, src map[string]any) {
	keys := make([]string, 0, len(live)+len(merged))
	for k := range live {
		keys = append(keys, k)
	}
	for k := range merged {
		if _, ok := live[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		lv, lok := live[k]
		mv, mok := merged[k]
		switch {
		case !mok:
			d.emit(at.field(k), refluxv1.ChangeAdd, nil, lv)
		case !lok:
			d.emit(at.field(k), refluxv1.ChangeRemove, prefer(src[k], mv), nil)
		default:
			d.walk(at.field(k), lv, mv, src[k])
		}
	}
}

func (d *differ) lists(at loc, live, merged, src []any) {
	if names := d.keys[at.abs]; len(names) > 0 {
		mi, mok := keyIndex(merged, names)
		_, lok := keyIndex(live, names)
		if mok && lok {
			si, _ := keyIndex(src, names)
			d.keyed(at, names, pair{live, merged, src}, mi, si)
			return
		}
	}
	n := min(len(live), len(merged))
	for i := range n {
		d.walk(at.elem(i, itoa(i)), live[i], merged[i], atIndex(src, i))
	}
	for i := n; i < len(live); i++ {
		d.emit(at.elem(i, itoa(i)), refluxv1.ChangeAdd, nil, live[i])
	}
	for i := n; i < len(merged); i++ {
		d.emit(at.elem(i, itoa(i)), refluxv1.ChangeRemove, prefer(atIndex(src, i), merged[i]), nil)
	}
}

// pair holds the three sides of one list.
type pair struct{ live, merged, src []any }

// keyed pairs elements by key. An element Git declares and live lacks is
// pointed at by its index in Git's list (or, failing that, in the merged
// one), in both pointers.
func (d *differ) keyed(at loc, names []string, p pair, mi, si map[string]int) {
	matched := make([]bool, len(p.merged))
	for i, item := range p.live {
		k := elementKey(item, names)
		j, ok := mi[k]
		if !ok || matched[j] {
			d.emit(at.elem(i, "-"), refluxv1.ChangeAdd, nil, item)
			continue
		}
		matched[j] = true
		gitIdx, src := "-", any(nil)
		if s, found := si[k]; found {
			gitIdx, src = itoa(s), p.src[s]
		}
		d.walk(at.elem(i, gitIdx), item, p.merged[j], src)
	}
	for j, ok := range matched {
		if ok {
			continue
		}
		k := elementKey(p.merged[j], names)
		idx, git := j, p.merged[j]
		if s, found := si[k]; found {
			idx, git = s, p.src[s]
		}
		gone := at.elem(idx, itoa(idx))
		d.emit(gone, refluxv1.ChangeRemove, git, nil)
	}
}

func atIndex(list []any, i int) any {
	if i < len(list) {
		return list[i]
	}
	return nil
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

func itoa(i int) string { return strconv.Itoa(i) }
