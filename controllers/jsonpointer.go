package controllers

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// jsonPointerValue returns the value at an RFC 6901 pointer.
func jsonPointerValue(obj map[string]interface{}, ptr string) (interface{}, bool, error) {
	if ptr == "" {
		return obj, true, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false, fmt.Errorf("pointer %q does not start with /", ptr)
	}
	var cur interface{} = obj
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]interface{}:
			v, ok := c[seg]
			if !ok {
				return nil, false, nil
			}
			cur = v
		case []interface{}:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false, nil
			}
			cur = c[i]
		default:
			return nil, false, nil
		}
	}
	return cur, true, nil
}

// sameJSON compares a decoded value with compact JSON text, by meaning.
func sameJSON(v interface{}, text string) bool {
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
