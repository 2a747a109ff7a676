package chart

import (
	"sort"
	"strconv"
	"strings"
)

// explore probes until the solo probes held tell, for every field in
// fields, every key that changes it:
//
//  1. Candidates are probed alone: keys whose marker reached one of the
//     fields in a render with every string key marked at once, and
//     number keys whose value equals one of the fields.
//  2. The other keys not yet probed alone are probed together. A group
//     that leaves every field as it was holds no key that changes them
//     (unless changes cancel out, see doc.go); a group that changes one
//     is halved, down to solo probes of the keys that do.
//
// A field explored once is not explored again: the probes that tell its
// keys are held.
//
// So a key only ever counts by a render that changed that key alone, and
// a key the chart never reads costs a share of one render.
func (a *Analysis) explore(fields []fieldRef) {
	var todo []fieldRef
	for _, f := range fields {
		if !a.explored[f] {
			todo = append(todo, f)
			a.explored[f] = true
		}
	}
	if len(todo) == 0 {
		return
	}
	fields = todo
	cands := a.candidates(fields)
	for _, c := range cands {
		a.probe([]int{c})
	}
	isCand := make(map[int]bool, len(cands))
	for _, c := range cands {
		isCand[c] = true
	}
	var rest []int
	for i := range a.leaves {
		if _, done := a.solo[i]; !done && !isCand[i] {
			rest = append(rest, i)
		}
	}
	a.groupTest(rest, fields)
}

// groupTest probes set at once and halves it while it changes any of
// fields (or fails to render), keeping only the fields it changed.
func (a *Analysis) groupTest(set []int, fields []fieldRef) {
	if len(set) == 0 || len(fields) == 0 {
		return
	}
	e := a.probe(set)
	hit := fields
	if e.err == nil {
		hit = nil
		for _, f := range fields {
			if _, ok := e.changeOf(f); ok {
				hit = append(hit, f)
			}
		}
	}
	if len(hit) == 0 || len(set) == 1 {
		return
	}
	mid := len(set) / 2
	a.groupTest(set[:mid], hit)
	a.groupTest(set[mid:], hit)
}

// candidates returns the keys worth probing alone first, in order.
func (a *Analysis) candidates(fields []fieldRef) []int {
	hits := a.tokenHits()
	seen := map[int]bool{}
	for _, f := range fields {
		for _, i := range hits[f] {
			seen[i] = true
		}
	}
	for i, l := range a.leaves {
		if a.tokenized[i] || seen[i] {
			continue
		}
		if _, isBool := l.value.(bool); isBool {
			continue // a bool matches half the fields; groups find the few that matter
		}
		for _, f := range fields {
			if sameScalar(a.value(f), l.value) {
				seen[i] = true
				break
			}
		}
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// tokenHits renders once with every tokenized key changed to its
// sentinel and records, for each baseline field, the keys whose sentinel
// shows in it. A render that fails is halved.
func (a *Analysis) tokenHits() map[fieldRef][]int {
	if a.hits != nil {
		return a.hits
	}
	a.hits = map[fieldRef][]int{}
	var set []int
	for i := range a.leaves {
		if a.tokenized[i] {
			set = append(set, i)
		}
	}
	a.markAll(set)
	return a.hits
}

func (a *Analysis) markAll(set []int) {
	if len(set) == 0 {
		return
	}
	rnd, err := a.renderWith(set)
	if err != nil {
		if len(set) > 1 {
			a.markAll(set[:len(set)/2])
			a.markAll(set[len(set)/2:])
		}
		return
	}
	in := make(map[int]bool, len(set))
	var quantities []int
	for _, i := range set {
		in[i] = true
		if !strings.Contains(a.sentinels[i].(string), "rfx") {
			quantities = append(quantities, i)
		}
	}
	match := matchObjects(a.base, rnd)
	for oi, j := range match {
		if j < 0 || rnd.Objects[j].Object == a.base.Objects[oi].Object {
			continue // gone, or the same text as the baseline's: no marker
		}
		walkLeaves(rnd.Objects[j].Object.Object, "", func(p string, v any) {
			s, ok := v.(string)
			if _, inBase := a.fields[oi][p]; !ok || !inBase {
				return
			}
			f := fieldRef{obj: oi, ptr: p}
			for _, m := range tokenID.FindAllStringSubmatch(s, -1) {
				id, _ := strconv.Atoi(m[1])
				if in[id] && strings.Contains(s, a.sentinels[id].(string)) {
					a.hits[f] = append(a.hits[f], id)
				}
			}
			for _, id := range quantities {
				if strings.Contains(s, a.sentinels[id].(string)) {
					a.hits[f] = append(a.hits[f], id)
				}
			}
		})
	}
}
