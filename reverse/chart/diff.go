package chart

import (
	"strconv"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// changeKind says how a probe moved one field of the baseline render.
type changeKind int

const (
	// changedValue: the field is there with another value.
	changedValue changeKind = iota + 1
	// changedGone: the field, or its whole object, is not rendered.
	changedGone
	// changedShifted: the field has another value, but a list above it
	// changed length, so an element was added or removed before it and
	// the value is most likely a neighbour's.
	changedShifted
)

// change is one field's change in a probe.
type change struct {
	kind  changeKind
	value any // the probe's value, for changedValue and changedShifted
}

// objectChange is how a probe changed one baseline object.
type objectChange struct {
	gone   bool
	fields map[string]change // by JSON pointer
}

// diff compares a probe's render to the baseline, object by baseline
// object index. Objects match by key; one the probe renamed (say
// nameOverride was changed) matches the probe's unmatched object rendered
// at the same place of the same template with the same kind.
func diff(base, probe *Rendering) map[int]*objectChange {
	match := matchObjects(base, probe)
	out := map[int]*objectChange{}
	for i, b := range base.Objects {
		j := match[i]
		if j < 0 {
			out[i] = &objectChange{gone: true}
			continue
		}
		if probe.Objects[j].Object == b.Object {
			continue // the template wrote the same text, see renderer.render
		}
		fields := map[string]change{}
		compare(b.Object.Object, probe.Objects[j].Object.Object, "", false, fields)
		if len(fields) > 0 {
			out[i] = &objectChange{fields: fields}
		}
	}
	return out
}

// matchObjects returns, for each baseline object, the index of the probe
// object it became, or -1.
func matchObjects(base, probe *Rendering) []int {
	match := make([]int, len(base.Objects))
	claimed := make([]bool, len(probe.Objects))
	var unmatched []int
	for i, b := range base.Objects {
		j, ok := probe.byKey[b.Key]
		if !ok {
			match[i] = -1
			unmatched = append(unmatched, i)
			continue
		}
		match[i], claimed[j] = j, true
	}
	for _, i := range unmatched {
		b := base.Objects[i]
		for j, p := range probe.Objects {
			if !claimed[j] && p.Template == b.Template && p.Index == b.Index &&
				p.Key.APIVersion == b.Key.APIVersion && p.Key.Kind == b.Key.Kind {
				match[i], claimed[j] = j, true
				break
			}
		}
	}
	return match
}

// compare records in out every leaf of b that p lacks or holds otherwise.
func compare(b, p any, ptr string, shifted bool, out map[string]change) {
	switch bt := b.(type) {
	case map[string]any:
		if len(bt) > 0 {
			pm, _ := p.(map[string]any)
			for k, bv := range bt {
				pv, ok := pm[k]
				if !ok {
					gone(bv, jsonptr.Append(ptr, k), out)
					continue
				}
				compare(bv, pv, jsonptr.Append(ptr, k), shifted, out)
			}
			return
		}
	case []any:
		if len(bt) > 0 {
			pl, _ := p.([]any)
			sh := shifted || len(pl) != len(bt)
			for i, bv := range bt {
				at := jsonptr.Append(ptr, strconv.Itoa(i))
				if i >= len(pl) {
					gone(bv, at, out)
					continue
				}
				compare(bv, pl[i], at, sh, out)
			}
			return
		}
	}
	if jsonptr.Equal(b, p) {
		return
	}
	if shifted {
		out[ptr] = change{kind: changedShifted, value: p}
		return
	}
	out[ptr] = change{kind: changedValue, value: p}
}

// gone records every leaf under v as gone.
func gone(v any, ptr string, out map[string]change) {
	jsonptr.WalkLeaves(v, ptr, func(p string, _ any) { out[p] = change{kind: changedGone} })
}
