// Package jsonptr reads RFC 6901 JSON pointers in decoded JSON objects.
// The drift engine and write-back both look values up by the pointers that
// Drift records carry; one implementation keeps them in agreement.
package jsonptr

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// Split returns the unescaped tokens of ptr ("" for the whole document has
// none).
func Split(ptr string) []string {
	if ptr == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

// Get returns the value at ptr in obj, and whether it exists.
func Get(obj map[string]interface{}, ptr string) (interface{}, bool) {
	var cur interface{} = obj
	for _, tok := range Split(ptr) {
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
