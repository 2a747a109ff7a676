package drift

import (
	"strconv"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// Pointer returns the JSON pointer (RFC 6901) that a managedFields path
// names in obj. Keyed (k:{...}), set (v:...) and indexed (i:N) list
// elements resolve to their index in obj, so the same path gives different
// pointers in objects whose lists are ordered differently. ok is false when
// obj has no such field or element.
func Pointer(obj map[string]any, path fieldpath.Path) (string, bool) {
	ptr, _, ok := resolve(obj, path)
	return ptr, ok
}

// resolve is Pointer that also returns the value found there.
func resolve(obj map[string]any, path fieldpath.Path) (string, any, bool) {
	var b strings.Builder
	var cur any = obj
	for _, pe := range path {
		next, token, ok := step(cur, pe)
		if !ok {
			return "", nil, false
		}
		b.WriteByte('/')
		b.WriteString(token)
		cur = next
	}
	return b.String(), cur, true
}

// step descends one path element into v, returning the child and its
// escaped pointer token.
func step(v any, pe fieldpath.PathElement) (any, string, bool) {
	if pe.FieldName != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, "", false
		}
		child, ok := m[*pe.FieldName]
		return child, jsonptr.Escape(*pe.FieldName), ok
	}
	list, ok := v.([]any)
	if !ok {
		return nil, "", false
	}
	i := index(list, pe)
	if i < 0 {
		return nil, "", false
	}
	return list[i], strconv.Itoa(i), true
}

// index finds the list element a path element names, or -1.
func index(list []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index >= 0 && *pe.Index < len(list) {
			return *pe.Index
		}
	case pe.Value != nil:
		for i, item := range list {
			if value.Equals(value.NewValueInterface(item), *pe.Value) {
				return i
			}
		}
	case pe.Key != nil:
		for i, item := range list {
			if keyMatches(item, *pe.Key) {
				return i
			}
		}
	}
	return -1
}

func keyMatches(item any, key value.FieldList) bool {
	m, ok := item.(map[string]any)
	if !ok {
		return false
	}
	for _, f := range key {
		v, ok := m[f.Name]
		if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
			return false
		}
	}
	return true
}

// touches reports whether set owns path itself or anything below it.
func touches(set *fieldpath.Set, path fieldpath.Path) bool {
	if len(path) == 0 {
		return !set.Empty()
	}
	cur := set
	for _, pe := range path[:len(path)-1] {
		child, ok := cur.Children.Get(pe)
		if !ok {
			return false
		}
		cur = child
	}
	last := path[len(path)-1]
	if cur.Members.Has(last) {
		return true
	}
	_, ok := cur.Children.Get(last)
	return ok
}
