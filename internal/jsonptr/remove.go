package jsonptr

import "strconv"

// Remove deletes the value ptr names from obj, in place: a map key, or a
// list element (later elements move up, as a JSON Patch remove does). It
// reports whether there was a value to remove; the empty pointer, the
// whole document, cannot be removed from itself.
func Remove(obj map[string]interface{}, ptr string) bool {
	toks, err := Split(ptr)
	if err != nil || len(toks) == 0 {
		return false
	}
	parent, ok := Get(obj, Join(toks[:len(toks)-1]...))
	if !ok {
		return false
	}
	last := toks[len(toks)-1]
	switch p := parent.(type) {
	case map[string]interface{}:
		if _, ok := p[last]; !ok {
			return false
		}
		delete(p, last)
		return true
	case []interface{}:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(p) {
			return false
		}
		// The list lives in its parent: write the shortened one back.
		return set(obj, toks[:len(toks)-1], append(p[:i:i], p[i+1:]...))
	}
	return false
}

// set replaces the value at toks, which must exist.
func set(obj map[string]interface{}, toks []string, v interface{}) bool {
	if len(toks) == 0 {
		return false
	}
	parent, ok := Get(obj, Join(toks[:len(toks)-1]...))
	if !ok {
		return false
	}
	last := toks[len(toks)-1]
	switch p := parent.(type) {
	case map[string]interface{}:
		p[last] = v
		return true
	case []interface{}:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(p) {
			return false
		}
		p[i] = v
		return true
	}
	return false
}
