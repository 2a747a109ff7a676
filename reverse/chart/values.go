package chart

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// step is one step down a values tree: a map key, or a list index when
// index >= 0.
type step struct {
	name  string
	index int
}

// leaf is one scalar of the values the templates see.
type leaf struct {
	steps []step
	value any
	// inUser: the release's values set it, not only the chart's values.yaml.
	inUser bool
}

// plainName is a map key the dotted notation writes bare.
var plainName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// keyPath writes steps in the notation of doc.go: names joined by dots,
// list indexes in brackets, any other key quoted in brackets:
// resources.limits.memory, env[0].value, podAnnotations["prometheus.io/port"].
func keyPath(steps []step) string {
	var b strings.Builder
	for i, s := range steps {
		switch {
		case s.index >= 0:
			fmt.Fprintf(&b, "[%d]", s.index)
		case plainName.MatchString(s.name):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		default:
			b.WriteString("[" + strconv.Quote(s.name) + "]")
		}
	}
	return b.String()
}

// keyPointer writes steps as a JSON pointer into the values.
func keyPointer(steps []step) string {
	toks := make([]string, len(steps))
	for i, s := range steps {
		toks[i] = s.name
		if s.index >= 0 {
			toks[i] = strconv.Itoa(s.index)
		}
	}
	return jsonptr.Join(toks...)
}

// leaves lists the scalars of full (the coalesced values) in key order.
// Nulls and empty maps or lists hold no scalar to change. skip drops a
// subtree, for the copies of globals Helm makes in each dependency's
// table, which the top-level global overrides.
func leaves(full, user map[string]any, skip func([]step) bool) []leaf {
	var out []leaf
	var walk func(v any, steps []step)
	walk = func(v any, steps []step) {
		if skip != nil && skip(steps) {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(t[k], append(steps[:len(steps):len(steps)], step{name: k, index: -1}))
			}
		case []any:
			for i, e := range t {
				walk(e, append(steps[:len(steps):len(steps)], step{index: i}))
			}
		case nil:
		default:
			out = append(out, leaf{steps: steps, value: t, inUser: has(user, steps)})
		}
	}
	walk(full, nil)
	return out
}

// has reports whether steps lead to a value in v.
func has(v any, steps []step) bool {
	for _, s := range steps {
		var ok bool
		if v, ok = child(v, s); !ok {
			return false
		}
	}
	return v != nil
}

// child steps once into v.
func child(v any, s step) (any, bool) {
	if s.index >= 0 {
		l, ok := v.([]any)
		if !ok || s.index >= len(l) {
			return nil, false
		}
		return l[s.index], true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	c, ok := m[s.name]
	return c, ok
}

// put sets steps to v in dst, the release's values, which Helm coalesces
// over the chart's: missing maps are made (Helm merges them with the
// chart's), and a list dst lacks is copied whole from full first, because
// Helm replaces lists rather than merging them.
func put(dst, full map[string]any, steps []step, v any) error {
	var cur any = dst
	var ref any = full
	for i, s := range steps {
		refNext, _ := child(ref, s)
		if i == len(steps)-1 {
			return assign(cur, s, v)
		}
		next, ok := child(cur, s)
		if !ok || !sameShape(next, steps[i+1]) {
			if steps[i+1].index >= 0 {
				next = copyTree(refNext)
			} else {
				next = map[string]any{}
			}
			if err := assign(cur, s, next); err != nil {
				return err
			}
		}
		cur, ref = next, refNext
	}
	return nil
}

func assign(container any, s step, v any) error {
	if s.index >= 0 {
		l, ok := container.([]any)
		if !ok || s.index >= len(l) {
			return fmt.Errorf("no list element [%d]", s.index)
		}
		l[s.index] = v
		return nil
	}
	m, ok := container.(map[string]any)
	if !ok {
		return fmt.Errorf("no table for %q", s.name)
	}
	m[s.name] = v
	return nil
}

// sameShape reports whether v can be stepped into by next.
func sameShape(v any, next step) bool {
	if next.index >= 0 {
		l, ok := v.([]any)
		return ok && next.index < len(l)
	}
	_, ok := v.(map[string]any)
	return ok
}
