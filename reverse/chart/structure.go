package chart

import (
	"strconv"
	"strings"
)

// frame is one level of the key path at a line of a template read as
// YAML text: a key, or a list element (elem >= 0).
type frame struct {
	indent int
	key    string
	elem   int
}

// structural finds the line of template whose YAML key path is toks,
// reading the document that declares kind as YAML text: indentation nests
// keys, and "- " starts a list element. Lines that are only template
// actions ({{- if }}, {{ toYaml . | nindent 4 }}) are skipped, so a field
// under a branch is found as written. It finds the line of a literal the
// text search cannot tell from another field with the same value
// (`name: web` of a container, beside `name: {{ include "web.name" . }}`),
// and nothing where the template builds the structure itself (toYaml):
// ok is false then.
func structural(f *srcFile, template, kind string, toks []string) (line int, ok bool) {
	var stack []frame
	order := f.order(template, kind)
	for n, li := range order {
		if n > 0 && li < order[n-1] {
			break // the lines before the document: another object's
		}
		raw := strings.TrimRight(f.lines[li], " \t")
		content := strings.TrimLeft(raw, " ")
		indent := len(raw) - len(content)
		switch {
		case content == "---":
			if n > 0 {
				return 0, false // the next document
			}
			continue
		case content == "", strings.HasPrefix(content, "#"), strings.HasPrefix(content, "{{"):
			continue
		}
		for strings.HasPrefix(content, "- ") || content == "-" {
			stack = popDeeper(stack, indent)
			if top := len(stack) - 1; top >= 0 && stack[top].elem >= 0 && stack[top].indent == indent {
				stack[top].elem++
			} else {
				stack = append(stack, frame{indent: indent, elem: 0})
			}
			content = strings.TrimPrefix(strings.TrimPrefix(content, "-"), " ")
			rest := strings.TrimLeft(content, " ")
			indent += 1 + (len(content) - len(rest)) + 1
			content = rest
			if content == "" {
				break
			}
		}
		key, _, isKey := strings.Cut(content, ":")
		if content != "" && isKey && !strings.Contains(key, "{{") && !strings.ContainsAny(key, " \"'") {
			stack = popDeeper(stack, indent-1)
			stack = append(stack, frame{indent: indent, key: key, elem: -1})
		}
		if samePath(stack, toks) {
			return li + 1, true
		}
	}
	return 0, false
}

// popDeeper drops the frames nested deeper than indent.
func popDeeper(stack []frame, indent int) []frame {
	for len(stack) > 0 && stack[len(stack)-1].indent > indent {
		stack = stack[:len(stack)-1]
	}
	return stack
}

// samePath tells whether the frames spell the pointer's tokens.
func samePath(stack []frame, toks []string) bool {
	if len(stack) != len(toks) {
		return false
	}
	for i, f := range stack {
		want := f.key
		if f.elem >= 0 {
			want = strconv.Itoa(f.elem)
		}
		if want != toks[i] {
			return false
		}
	}
	return true
}
