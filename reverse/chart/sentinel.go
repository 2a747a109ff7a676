package chart

import (
	"fmt"
	"regexp"
	"strconv"
)

// tokenBase starts the numbers in quantity sentinels: six digits, so no
// sentinel is a substring of another, and small enough that text/template
// prints them plainly (a float64 of 1e6 or more prints as 1e+06).
const tokenBase = 900000

var (
	// quantity is a Kubernetes quantity with a unit: 512Mi, 100m, 1.5Gi.
	quantity = regexp.MustCompile(`^[0-9]+(?:\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)$`)
	// numeric is a number written as a string: "8080", "0.5".
	numeric = regexp.MustCompile(`^-?[0-9]+(?:\.[0-9]+)?$`)
	// tokenID finds the marker of a string sentinel in rendered text.
	tokenID = regexp.MustCompile(`rfx([0-9]{5})`)
)

// sentinel returns the value leaf i is changed to in a probe: one of the
// same type and shape, so the template takes the path it takes for the
// real value, and one that is different, so the change shows.
//
//   - A bool is negated.
//   - A number is a number one more: a string would break "gt", "add" or
//     "int", and a large one would print as 1e+06 and make "until" loop
//     for ever.
//   - A numeric string is the number one more, still a string.
//   - A quantity keeps its unit (512Mi → 900007Mi), so templates that
//     trim the unit and do arithmetic still render.
//   - Any other string keeps its text and gains a marker ("nginx" →
//     "nginx-rfx00007"), so a semver stays a semver and a name a name,
//     and the marker can be found in the render whatever quote, toYaml,
//     tpl, default or include did on the way.
//
// tokenized reports whether the sentinel can be found by text in a render
// of many sentinels at once: markers and quantities are unique per leaf,
// numbers one more are not.
func sentinel(i int, v any) (s any, tokenized bool) {
	switch t := v.(type) {
	case bool:
		return !t, false
	case string:
		switch {
		case numeric.MatchString(t):
			f, _ := strconv.ParseFloat(t, 64)
			return strconv.FormatFloat(f+1, 'f', -1, 64), false
		case quantity.MatchString(t):
			return fmt.Sprintf("%d%s", tokenBase+i, quantity.FindStringSubmatch(t)[1]), true
		case t == "":
			return fmt.Sprintf("rfx%05d", i), true
		default:
			return fmt.Sprintf("%s-rfx%05d", t, i), true
		}
	}
	if f, ok := toFloat(v); ok {
		return f + 1, false
	}
	return nil, false
}

// toFloat reads a decoded number.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// text is v as a template prints it with {{ }} or quote.
func text(v any) string {
	return fmt.Sprint(v)
}
