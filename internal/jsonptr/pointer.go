package jsonptr

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is returned for a pointer that is neither empty nor starts
// with "/".
var ErrSyntax = errors.New("invalid JSON pointer")

// Escape encodes one reference token (RFC 6901 section 3): "~" becomes
// "~0" and "/" becomes "~1".
func Escape(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token // the common case, without allocating
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// Unescape decodes one reference token: "~1" becomes "/", then "~0"
// becomes "~", in that order so "~01" reads "~1" (RFC 6901 section 4).
//
// A "~" followed by anything else is kept as it is rather than refused:
// evanphx/json-patch, which kustomize applies JSON6902 patches with, reads
// such paths this way, and the origin model must read them as kustomize
// does.
func Unescape(token string) string {
	if !strings.Contains(token, "~") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}

// Split returns the unescaped reference tokens of ptr. The empty pointer
// names the whole document and has none; "/" has one, the empty key. A
// pointer that does not start with "/" is an ErrSyntax.
func Split(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	if ptr[0] != '/' {
		return nil, fmt.Errorf("%w: %q does not start with /", ErrSyntax, ptr)
	}
	toks := strings.Split(ptr[1:], "/")
	for i, t := range toks {
		toks[i] = Unescape(t)
	}
	return toks, nil
}

// Join returns the pointer naming the unescaped tokens, in order. Join()
// is "", the whole document.
func Join(tokens ...string) string {
	return Append("", tokens...)
}

// Append returns ptr extended by the unescaped tokens, so a caller walking
// a document never escapes by hand.
func Append(ptr string, tokens ...string) string {
	if len(tokens) == 0 {
		return ptr
	}
	var b strings.Builder
	b.Grow(len(ptr) + 16*len(tokens))
	b.WriteString(ptr)
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(Escape(t))
	}
	return b.String()
}

// Under reports whether ptr is prefix or lies below it: "/data" is under
// "/data" and "/data/A" is, "/database" is not.
func Under(ptr, prefix string) bool {
	return ptr == prefix || strings.HasPrefix(ptr, prefix+"/")
}
