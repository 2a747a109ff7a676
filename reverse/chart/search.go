package chart

import "sort"

// explore probes until the probes held tell, for every field in fields,
// every key that changes it:
//
//  1. The marked render (batch.go) changes every string key at once. A
//     field it changed only by putting markers in for their keys' values
//     is explained: those keys set it, each as the marker shows. A field
//     it changed otherwise (removed, transformed, the marker not
//     verbatim) is settled within the marked keys: suspects alone first,
//     then the rest halved down to the keys whose solo probes change it.
//  2. Number keys whose value equals one of the fields are probed alone.
//  3. The other keys not probed alone (bools, numbers that do not show)
//     are probed together. A
//     group that leaves every field as it was holds no key that changes
//     them (unless changes cancel out, see doc.go); a group that changes
//     one is halved, down to solo probes of the keys that do.
//
// A field explored once is not explored again: the probes that tell its
// keys are held. A key the chart never reads costs a share of one render.
func (a *Analysis) explore(fields []fieldRef) {
	var todo []fieldRef
	want := map[fieldRef]bool{}
	for _, f := range fields {
		if !a.explored[f] {
			todo = append(todo, f)
			a.explored[f] = true
			want[f] = true
		}
	}
	if len(todo) == 0 {
		return
	}
	for _, b := range a.markedBatches() {
		var unexplained []fieldRef
		for _, f := range b.unexplained {
			if want[f] {
				unexplained = append(unexplained, f)
			}
		}
		a.settle(b, unexplained)
	}
	cands := a.candidates(todo)
	for _, c := range cands {
		a.probe([]int{c})
	}
	var rest []int
	for i := range a.leaves {
		if _, done := a.solo[i]; !done && !a.tokenized[i] {
			rest = append(rest, i)
		}
	}
	a.groupTest(rest, todo)
}

// settle finds the keys of a marked batch that changed fields it does
// not explain. Suspects are probed alone first (batch.go); the rest of
// the batch is then probed as a group, which one render clears unless
// another key is to blame too. Suspects only save renders: the group
// finds every key whether they were right or not.
func (a *Analysis) settle(b *batch, fields []fieldRef) {
	if len(fields) == 0 {
		return
	}
	suspects := a.suspects(b, fields)
	if len(suspects) > len(b.set)/2 {
		suspects = nil // as many as the batch: halving costs less
	}
	for _, i := range suspects {
		a.probe([]int{i})
	}
	if len(suspects) == 0 {
		a.groupTest(b.set, fields)
		return
	}
	var rest []int
	for _, i := range b.set {
		if _, done := a.solo[i]; !done {
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

// candidates returns the number keys (and numeric strings) that equal one
// of fields, in key order: a count or a port usually reaches its field
// as it is, and probing it alone costs less than finding it by halving.
// A bool equals half the fields of any object, so bools are left to the
// groups, which find the few that matter.
func (a *Analysis) candidates(fields []fieldRef) []int {
	var out []int
	for i, l := range a.leaves {
		if _, done := a.solo[i]; done || a.tokenized[i] {
			continue
		}
		if _, isBool := l.value.(bool); isBool {
			continue
		}
		for _, f := range fields {
			if sameScalar(a.value(f), l.value) {
				out = append(out, i)
				break
			}
		}
	}
	sort.Ints(out)
	return out
}
