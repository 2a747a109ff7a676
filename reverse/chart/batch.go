package chart

import (
	"sort"
	"strconv"
	"strings"
)

// batch is a render with many string keys changed to their marked
// sentinels at once, and what it tells.
type batch struct {
	set []int
	// unexplained are the fields it changed otherwise than by putting
	// markers in for values; markers, the keys whose sentinels still
	// show in them.
	unexplained []fieldRef
	markers     map[fieldRef][]int
}

// attribution is one key's share of a field a batch explained: the field
// as changing that key alone makes it.
type attribution struct {
	leaf  int
	value string
}

// markedBatches renders, once, every tokenized key changed at once,
// halving a set that fails to render. A key that fails alone is held as
// a failed solo probe (Unprobed).
func (a *Analysis) markedBatches() []*batch {
	if !a.batched {
		a.batched = true
		var set []int
		for i := range a.leaves {
			if a.tokenized[i] {
				set = append(set, i)
			}
		}
		a.markBatch(set)
	}
	return a.batches
}

func (a *Analysis) markBatch(set []int) {
	if len(set) == 0 {
		return
	}
	e := a.probe(set) // held, so halving the batch later starts from it
	if e.err != nil {
		if len(set) > 1 {
			a.markBatch(set[:len(set)/2])
			a.markBatch(set[len(set)/2:])
		}
		return
	}
	b := &batch{set: set, markers: map[fieldRef][]int{}}
	for oi, oc := range e.objects {
		if oc.gone {
			for p := range a.fields[oi] {
				b.unexplained = append(b.unexplained, fieldRef{obj: oi, ptr: p})
			}
			continue
		}
		for p, c := range oc.fields {
			f := fieldRef{obj: oi, ptr: p}
			attrs, ok := a.explain(f, c, set)
			if !ok {
				b.unexplained = append(b.unexplained, f)
				b.markers[f] = a.markers(c, set)
				continue
			}
			a.attrib[f] = append(a.attrib[f], attrs...)
		}
	}
	a.batches = append(a.batches, b)
}

// explain tells whether a batch of set changed f only by putting markers
// in for values: the new value is a string holding, verbatim, the
// sentinels of some keys of set, and putting their values back gives the
// field as it was. Then each of those keys, changed alone, makes the
// field the new value with the others' values put back. Anything else (a
// field removed, a marker transformed by b64enc or upper, a tpl that ran
// the marker's text, a branch taken otherwise) is not explained.
func (a *Analysis) explain(f fieldRef, c change, set []int) ([]attribution, bool) {
	s, ok := c.value.(string)
	if c.kind != changedValue || !ok {
		return nil, false
	}
	var keys []int
	for _, id := range a.tokens(s, set, false) {
		if id < 0 {
			return nil, false // a marker not verbatim, or of a key not in set
		}
		keys = append(keys, id)
	}
	if len(keys) == 0 || !sameScalar(a.putBack(s, keys, -1), a.value(f)) {
		return nil, false
	}
	attrs := make([]attribution, len(keys))
	for i, id := range keys {
		attrs[i] = attribution{leaf: id, value: a.putBack(s, keys, id)}
	}
	return attrs, true
}

// putBack replaces the sentinels of keys in s with their values, all but
// keep's.
func (a *Analysis) putBack(s string, keys []int, keep int) string {
	for _, id := range keys {
		if id != keep {
			s = strings.ReplaceAll(s, a.marked(id), text(a.leaves[id].value))
		}
	}
	return s
}

// tokens lists the keys whose markers show in s: those of set whose whole
// sentinel is there, and, unless known is set, -1 for each marker that
// is not verbatim or not of set.
func (a *Analysis) tokens(s string, set []int, known bool) []int {
	in := make(map[int]bool, len(set))
	for _, id := range set {
		in[id] = true
	}
	var ids []int
	for _, m := range tokenID.FindAllStringSubmatch(s, -1) {
		id, _ := strconv.Atoi(m[1])
		switch {
		case in[id] && a.marked(id) != "" && strings.Contains(s, a.marked(id)):
			ids = append(ids, id)
		case !known:
			ids = append(ids, -1)
		}
	}
	for _, id := range set {
		if q := a.marked(id); q != "" && !strings.Contains(q, "rfx") && strings.Contains(s, q) {
			ids = append(ids, id) // a quantity: 900017Mi carries no marker
		}
	}
	return ids
}

// marked is leaf id's sentinel when it is tokenized, else "".
func (a *Analysis) marked(id int) string {
	if id < 0 || id >= len(a.sentinels) || !a.tokenized[id] {
		return ""
	}
	s, _ := a.sentinels[id].(string)
	return s
}

// markers lists the keys of set whose sentinels show in a changed value.
func (a *Analysis) markers(c change, set []int) []int {
	s, _ := c.value.(string)
	return a.tokens(s, set, true)
}

// suspects returns the keys of b likely to have changed fields it does
// not explain, in key order: those whose markers still show in them (the
// template put its own value around the key's, as default does), and
// those whose last name is read as .name on the template line that
// writes the field (a value b64enc or sha256sum hid, read as
// .Values.secret.password or, inside with, as .password).
func (a *Analysis) suspects(b *batch, fields []fieldRef) []int {
	seen := map[int]bool{}
	names := map[string]bool{}
	for _, f := range fields {
		for _, id := range b.markers[f] {
			seen[id] = true
		}
		for _, n := range a.src.readOnLine(a.base.Objects[f.obj].Template, f.ptr) {
			names[n] = true
		}
	}
	for _, id := range b.set {
		if names[lastName(a.leaves[id].steps)] {
			seen[id] = true
		}
	}
	out := make([]int, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

// lastName is the last map key of steps that dot syntax can write.
func lastName(steps []step) string {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].index < 0 {
			if ident.MatchString(steps[i].name) {
				return steps[i].name
			}
			return ""
		}
	}
	return ""
}
