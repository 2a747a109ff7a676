package jsonptr

import (
	"encoding/json"
	"reflect"
	"strconv"
)

// Get returns the value at ptr in obj, and whether it exists. A pointer
// that is not valid (see Split) exists nowhere.
func Get(obj map[string]interface{}, ptr string) (interface{}, bool) {
	toks, err := Split(ptr)
	if err != nil {
		return nil, false
	}
	var cur interface{} = obj
	for _, tok := range toks {
		switch c := cur.(type) {
		case map[string]interface{}:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []interface{}:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Matches reports whether a decoded value means the same as the compact
// JSON text a Drift record holds for it (numbers compare by value, so 3
// matches "3.0").
func Matches(v interface{}, text string) bool {
	var want interface{}
	if err := json.Unmarshal([]byte(text), &want); err != nil {
		return false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var got interface{}
	if err := json.Unmarshal(raw, &got); err != nil {
		return false
	}
	return reflect.DeepEqual(got, want)
}
