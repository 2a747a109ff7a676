package edit

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// span is a byte range [start, end) of a file.
type span struct{ start, end int }

// offsetOf returns the byte offset of a 1-based line and column; yaml.v3
// counts columns in characters. It reads data in place: a write-back
// looks up every field it sets, and converting the rest of the file to a
// string at each line copied it again and again (a burst of 100 fields in
// a 500-document file spent a core in that copy and its garbage).
func offsetOf(data []byte, line, col int) (int, error) {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return 0, fmt.Errorf("line %d past end of file", line)
		}
		off += i + 1
	}
	rest := data[off:]
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	n := 0
	for i := 0; i < len(rest); n++ {
		if n == col-1 {
			return off + i, nil
		}
		_, size := utf8.DecodeRune(rest[i:])
		i += size
	}
	if n == col-1 {
		return off + len(rest), nil
	}
	return 0, fmt.Errorf("column %d past end of line %d", col, line)
}

// scalarSpan finds the extent of the scalar token starting at off.
func scalarSpan(data []byte, off int) (span, byte, error) {
	if off >= len(data) {
		return span{}, 0, fmt.Errorf("offset past end of file")
	}
	switch q := data[off]; q {
	case '"':
		for i := off + 1; i < len(data); i++ {
			if data[i] == '\\' {
				i++
				continue
			}
			if data[i] == '"' {
				return span{off, i + 1}, q, nil
			}
		}
		return span{}, 0, fmt.Errorf("unterminated double-quoted scalar")
	case '\'':
		for i := off + 1; i < len(data); i++ {
			if data[i] == '\'' {
				if i+1 < len(data) && data[i+1] == '\'' {
					i++
					continue
				}
				return span{off, i + 1}, q, nil
			}
		}
		return span{}, 0, fmt.Errorf("unterminated single-quoted scalar")
	case '|', '>':
		return span{}, 0, fmt.Errorf("%w: block scalar", ErrUnsupported)
	case '*', '&':
		// An alias shares its anchor's value, and an anchor is shared by
		// its aliases: a splice here would either leave an alias without
		// its anchor or change every field that aliases it.
		word := strings.Fields(string(data[off:min(len(data), off+256)]))[0]
		return span{}, 0, fmt.Errorf("%w: the value is a YAML %s (%s) shared with other fields; edit it by hand", ErrUnsupported, map[byte]string{'*': "alias", '&': "anchor"}[q], word)
	case '!':
		// A tag decides how the value is read; replacing it with the new
		// value's own form could change the type Flux applies.
		return span{}, 0, fmt.Errorf("%w: tagged scalar", ErrUnsupported)
	}
	return plainSpan(data, off), 0, nil
}

// plainSpan ends a plain scalar at a comment, the end of the line, or, in
// flow context, a flow indicator.
func plainSpan(data []byte, off int) span {
	lineStart := bytes.LastIndexByte(data[:off], '\n') + 1
	flow := 0
	for _, c := range data[lineStart:off] {
		switch c {
		case '[', '{':
			flow++
		case ']', '}':
			flow--
		}
	}
	end := off
	for end < len(data) && data[end] != '\n' {
		c := data[end]
		if c == '#' && end > off && (data[end-1] == ' ' || data[end-1] == '\t') {
			break
		}
		if flow > 0 && (c == ',' || c == ']' || c == '}') {
			break
		}
		end++
	}
	for end > off && (data[end-1] == ' ' || data[end-1] == '\t' || data[end-1] == '\r') {
		end--
	}
	return span{off, end}
}

// formatScalar renders v for a YAML slot that used quote style q (0 for
// plain), keeping the style whenever the value allows it.
func formatScalar(v interface{}, q byte) (string, error) {
	s, isString := v.(string)
	if !isString {
		switch t := v.(type) {
		case bool, int, int64, float64:
			return fmt.Sprint(t), nil
		}
		return "", fmt.Errorf("%w: value of type %T", ErrUnsupported, v)
	}
	switch q {
	case '\'':
		if !strings.ContainsAny(s, "\n") {
			return "'" + strings.ReplaceAll(s, "'", "''") + "'", nil
		}
	case 0:
		if plainSafe(s) {
			return s, nil
		}
	}
	return strconv.Quote(s), nil
}

// plainSafe reports whether s, written plain, reads back as the same string.
func plainSafe(s string) bool {
	if s == "" || strings.ContainsAny(s, "\n\t") || strings.TrimSpace(s) != s {
		return false
	}
	var back interface{}
	if err := yaml.Unmarshal([]byte("k: "+s), &back); err != nil {
		return false
	}
	m, ok := back.(map[string]interface{})
	return ok && len(m) == 1 && m["k"] == s
}

// splice replaces a byte span.
func splice(data []byte, sp span, text string) []byte {
	out := make([]byte, 0, len(data)-sp.end+sp.start+len(text))
	out = append(out, data[:sp.start]...)
	out = append(out, text...)
	return append(out, data[sp.end:]...)
}
