package jsonptr

import "strconv"

// WalkLeaves calls fn with the pointer and value of every leaf under v,
// a decoded JSON document whose pointer is ptr: scalars, and maps or
// lists that are empty, since those are fields too (an emptied list is a
// change a field-by-field diff must see).
func WalkLeaves(v any, ptr string, fn func(ptr string, v any)) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) > 0 {
			for k, e := range t {
				WalkLeaves(e, Append(ptr, k), fn)
			}
			return
		}
	case []any:
		if len(t) > 0 {
			for i, e := range t {
				WalkLeaves(e, Append(ptr, strconv.Itoa(i)), fn)
			}
			return
		}
	}
	fn(ptr, v)
}

// IsLeaf reports whether v is a value WalkLeaves visits.
func IsLeaf(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return true
}
