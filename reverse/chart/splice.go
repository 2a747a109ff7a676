package chart

import (
	"math"
	"strconv"
	"strings"
)

// A field the chart builds from several keys (KindComputed) has no one
// key to change, yet the common live edit of one changes one part of it:
// an image rolled back to another tag of the same repository. When the
// rendered field shows one key's value exactly once, and the live field
// differs from it only in that place, that key with the live text in its
// place is the change to propose. Text proves nothing about a template,
// so the render must confirm it (VerifyValues) before it is proposed.

// Spliced returns the one key of keys whose value, replaced in the
// rendered field, makes the live field, and the value it needs. It
// reports false when none does, or more than one.
func Spliced(rendered, live string, keys []Key) (Key, any, bool) {
	var found Key
	var value any
	n := 0
	for _, k := range keys {
		if v, ok := SpliceValue(rendered, live, k.Value); ok {
			found, value = k, v
			n++
		}
	}
	if n != 1 {
		return Key{}, nil, false
	}
	return found, value, true
}

// SpliceValue returns the value a key now holding current needs for the
// rendered field, which shows current exactly once, to become live,
// typed as current is. It reports false when rendered does not show
// current exactly once, when live differs from rendered anywhere but
// there, or when the live text cannot be current's type.
func SpliceValue(rendered, live string, current any) (any, bool) {
	t, ok := scalarText(current)
	if !ok || t == "" || strings.Count(rendered, t) != 1 {
		return nil, false
	}
	i := strings.Index(rendered, t)
	prefix, suffix := rendered[:i], rendered[i+len(t):]
	if !strings.HasPrefix(live, prefix) || !strings.HasSuffix(live, suffix) || len(live) < len(prefix)+len(suffix) {
		return nil, false
	}
	part := live[len(prefix) : len(live)-len(suffix)]
	if part == "" || part == t {
		return nil, false
	}
	switch current.(type) {
	case string:
		return part, true
	case bool:
		b, err := strconv.ParseBool(part)
		if err != nil {
			return nil, false
		}
		return b, true
	}
	f, err := strconv.ParseFloat(part, 64)
	if err != nil {
		return nil, false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), true
	}
	return f, true
}

// scalarText is a scalar as a template prints it.
func scalarText(v any) (string, bool) {
	switch v.(type) {
	case string, bool:
		return text(v), true
	}
	if f, ok := toFloat(v); ok {
		return strconv.FormatFloat(f, 'f', -1, 64), true
	}
	return "", false
}
