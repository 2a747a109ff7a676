package chart

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// ErrUnverified is returned when a values change does not render as the
// live edit it proposes: a field asked for takes another value, or
// something else in the release changes too.
var ErrUnverified = errors.New("the values change does not render as the live edit")

// Setting is one values key, in the notation of doc.go, and the value a
// values change gives it.
type Setting struct {
	Key   string
	Value any
}

// Wanted is one rendered field and the value a values change must give
// it.
type Wanted struct {
	Object  ObjectKey
	Pointer string
	Value   any
}

// VerifyValues proves a values change through the chart before it is
// proposed (issue 19 §6): ch rendered for rel with values changed by set
// must give every field of want its value, and differ from the render
// with values in nothing else, no object added, removed or otherwise
// changed. Reading the templates could not promise that: a key may feed
// a second field (an annotation, a checksum), or a condition. values are
// the release's own, as for Render; set may add keys only the chart's
// values.yaml held. The error wraps ErrUnverified, ErrRender or ErrValues.
func VerifyValues(ch *chartv2.Chart, values map[string]any, rel Release, set []Setting, want []Wanted) error {
	user, err := normalize(values)
	if err != nil {
		return err
	}
	r := renderer{chart: ch, rel: rel}
	before, err := r.render(user, true, nil)
	if err != nil {
		return err
	}
	full, err := r.coalesced(user)
	if err != nil {
		return err
	}
	changed, _ := copyTree(user).(map[string]any)
	for _, s := range set {
		steps, err := parseKeyPath(s.Key)
		if err != nil {
			return err
		}
		v, err := normalize(map[string]any{"v": s.Value})
		if err != nil {
			return err
		}
		if err := put(changed, full, steps, v["v"]); err != nil {
			return fmt.Errorf("%w: setting %s: %w", ErrValues, s.Key, err)
		}
	}
	after, err := r.render(changed, true, nil)
	if err != nil {
		return fmt.Errorf("with the new values: %w", err)
	}
	return compareRenders(before, after, want)
}

// compareRenders says how after differs from before other than as want
// asks, and where want is not met.
func compareRenders(before, after *Rendering, want []Wanted) error {
	expected := map[ObjectKey]map[string]any{}
	for _, w := range want {
		if expected[w.Object] == nil {
			expected[w.Object] = map[string]any{}
		}
		expected[w.Object][w.Pointer] = w.Value
	}
	var problems []string
	for _, b := range before.Objects {
		a, ok := after.Get(b.Key)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is no longer rendered", b.Key))
			continue
		}
		for _, ptr := range differing(b.Object.Object, a.Object.Object) {
			v, asked := expected[b.Key][ptr]
			got, found := jsonptr.Get(a.Object.Object, ptr)
			if !asked || !found || !jsonptr.Equal(got, v) {
				problems = append(problems, fmt.Sprintf("%s %s changes too (%s)", b.Key, ptr, shown(got, found)))
			}
		}
	}
	for _, a := range after.Objects {
		if _, ok := before.Get(a.Key); !ok {
			problems = append(problems, fmt.Sprintf("%s is rendered too", a.Key))
		}
	}
	for _, w := range want {
		a, ok := after.Get(w.Object)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is not rendered", w.Object))
			continue
		}
		if got, found := jsonptr.Get(a.Object.Object, w.Pointer); !found || !jsonptr.Equal(got, w.Value) {
			problems = append(problems, fmt.Sprintf("%s %s renders %s, not %v", w.Object, w.Pointer, shown(got, found), w.Value))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: %s", ErrUnverified, strings.Join(problems, "; "))
	}
	return nil
}

// differing lists the leaves where a and b differ, either way: changed,
// gone, or added.
func differing(a, b map[string]any) []string {
	set := map[string]change{}
	compare(a, b, "", false, set)
	compare(b, a, "", false, set)
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func shown(v any, found bool) string {
	if !found {
		return "absent"
	}
	return fmt.Sprint(v)
}

// KeyPointer returns a key in the notation of doc.go as a JSON pointer
// into the values: env[0].value is /env/0/value.
func KeyPointer(path string) (string, error) {
	steps, err := parseKeyPath(path)
	if err != nil {
		return "", err
	}
	return keyPointer(steps), nil
}

// parseKeyPath reads what keyPath wrote: names joined by dots, list
// indexes in brackets, any other name quoted in brackets.
func parseKeyPath(path string) ([]step, error) {
	bad := func(why string) error { return fmt.Errorf("values key %q: %s", path, why) }
	var steps []step
	rest := path
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, "["):
			end := closing(rest)
			if end < 0 {
				return nil, bad("unclosed [")
			}
			inner := rest[1:end]
			rest = rest[end+1:]
			if strings.HasPrefix(inner, `"`) {
				name, err := strconv.Unquote(inner)
				if err != nil {
					return nil, bad("bad quoted name " + inner)
				}
				steps = append(steps, step{name: name, index: -1})
				continue
			}
			i, err := strconv.Atoi(inner)
			if err != nil || i < 0 {
				return nil, bad("bad index [" + inner + "]")
			}
			steps = append(steps, step{index: i})
		case strings.HasPrefix(rest, "."):
			if len(steps) == 0 {
				return nil, bad("starts with a dot")
			}
			rest = rest[1:]
			fallthrough
		default:
			n := strings.IndexAny(rest, ".[")
			if n < 0 {
				n = len(rest)
			}
			name := rest[:n]
			if !plainName.MatchString(name) {
				return nil, bad("bad name " + strconv.Quote(name))
			}
			steps = append(steps, step{name: name, index: -1})
			rest = rest[n:]
		}
	}
	if len(steps) == 0 {
		return nil, bad("empty")
	}
	return steps, nil
}

// closing returns the index of the ] that closes the [ s starts with,
// past a quoted name's escapes, or -1.
func closing(s string) int {
	if len(s) > 1 && s[1] == '"' {
		for i := 2; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				if i+1 < len(s) && s[i+1] == ']' {
					return i + 1
				}
				return -1
			}
		}
		return -1
	}
	return strings.IndexByte(s, ']')
}
