package jsonptr_test

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

func TestEscape(t *testing.T) {
	tests := []struct{ token, escaped string }{
		{"replicas", "replicas"},
		{"", ""},
		{"example.com/owner", "example.com~1owner"},
		{"t~x", "t~0x"},
		{"~/", "~0~1"},
		{"/~", "~1~0"},
		{"~1", "~01"},
		{"país", "país"},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(jsonptr.Escape(tt.token)).To(Equal(tt.escaped))
			g.Expect(jsonptr.Unescape(tt.escaped)).To(Equal(tt.token))
		})
	}
}

func TestUnescapeKeepsStrayTildes(t *testing.T) {
	g := NewWithT(t)
	// evanphx/json-patch, which kustomize applies patches with, keeps
	// them; so must the origin model.
	g.Expect(jsonptr.Unescape("a~2b")).To(Equal("a~2b"))
	g.Expect(jsonptr.Unescape("a~")).To(Equal("a~"))
	g.Expect(jsonptr.Unescape("~01")).To(Equal("~1"))
}

func TestSplit(t *testing.T) {
	tests := []struct {
		ptr  string
		want []string
		err  error
	}{
		{"", nil, nil},
		{"/", []string{""}, nil},
		{"//", []string{"", ""}, nil},
		{"/spec/replicas", []string{"spec", "replicas"}, nil},
		{"/spec/containers/0/image", []string{"spec", "containers", "0", "image"}, nil},
		{"/metadata/annotations/example.com~1owner", []string{"metadata", "annotations", "example.com/owner"}, nil},
		{"/a~0b/~01", []string{"a~b", "~1"}, nil},
		{"spec/replicas", nil, jsonptr.ErrSyntax},
		{"#/spec", nil, jsonptr.ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.ptr, func(t *testing.T) {
			g := NewWithT(t)
			got, err := jsonptr.Split(tt.ptr)
			if tt.err != nil {
				g.Expect(errors.Is(err, tt.err)).To(BeTrue(), "error %v", err)
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestJoinAndAppend(t *testing.T) {
	tests := []struct {
		name   string
		base   string
		tokens []string
		want   string
	}{
		{"nothing", "", nil, ""},
		{"base only", "/spec", nil, "/spec"},
		{"plain", "", []string{"spec", "replicas"}, "/spec/replicas"},
		{"escaped", "/metadata", []string{"annotations", "example.com/owner"}, "/metadata/annotations/example.com~1owner"},
		{"tilde", "", []string{"a~b"}, "/a~0b"},
		{"empty key", "", []string{""}, "/"},
		{"index", "/spec/containers", []string{"0", "image"}, "/spec/containers/0/image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(jsonptr.Append(tt.base, tt.tokens...)).To(Equal(tt.want))
			if tt.base == "" {
				g.Expect(jsonptr.Join(tt.tokens...)).To(Equal(tt.want))
			}
		})
	}
}

// FuzzEscape checks that every token survives Escape then Unescape, and
// that an escaped token never holds a "/" that Split would cut at.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a", "~", "/", "~0", "~1", "~01", "a/b~c", "~~//", "país/~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		e := jsonptr.Escape(token)
		if strings.Contains(e, "/") {
			t.Fatalf("Escape(%q) = %q holds a /", token, e)
		}
		if got := jsonptr.Unescape(e); got != token {
			t.Fatalf("Unescape(Escape(%q)) = %q", token, got)
		}
	})
}

// FuzzSplitJoin checks both directions: tokens joined then split come back
// unchanged, and a pointer split then joined comes back unchanged unless it
// held a "~" that escapes nothing (which Unescape keeps, and Escape then
// writes as "~0").
func FuzzSplitJoin(f *testing.F) {
	f.Add("spec", "example.com/owner", "~")
	f.Add("", "", "")
	f.Add("~01", "/", "a~b")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		toks := []string{a, b, c}
		got, err := jsonptr.Split(jsonptr.Join(toks...))
		if err != nil {
			t.Fatalf("Split(Join(%q)): %v", toks, err)
		}
		if len(got) != 3 || got[0] != a || got[1] != b || got[2] != c {
			t.Fatalf("Split(Join(%q)) = %q", toks, got)
		}
		ptr := "/" + a
		parts, err := jsonptr.Split(ptr)
		if err != nil {
			t.Fatalf("Split(%q): %v", ptr, err)
		}
		if canonical(ptr) && jsonptr.Join(parts...) != ptr {
			t.Fatalf("Join(Split(%q)) = %q", ptr, jsonptr.Join(parts...))
		}
	})
}

// canonical reports whether every "~" of ptr starts "~0" or "~1".
func canonical(ptr string) bool {
	for i := 0; i < len(ptr); i++ {
		if ptr[i] == '~' && (i+1 == len(ptr) || ptr[i+1] != '0' && ptr[i+1] != '1') {
			return false
		}
	}
	return true
}

func TestUnder(t *testing.T) {
	for _, tt := range []struct {
		ptr, prefix string
		want        bool
	}{
		{"/data", "/data", true},
		{"/data/A", "/data", true},
		{"/data/A/b", "/data", true},
		{"/database", "/data", false},
		{"/dat", "/data", false},
		{"/spec", "/data", false},
	} {
		if got := jsonptr.Under(tt.ptr, tt.prefix); got != tt.want {
			t.Errorf("Under(%q, %q) = %v, want %v", tt.ptr, tt.prefix, got, tt.want)
		}
	}
}
