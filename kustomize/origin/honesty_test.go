package origin

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestOriginsPointAtValues is the hand spot-check made mechanical: for
// every mapped field of every corpus tree, the text at FILE:LINE:COL must
// be the value (or, for affixes, images and substitutions, the part of it)
// that the layer contributed.
func TestOriginsPointAtValues(t *testing.T) {
	for _, tc := range corpus(t) {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			idx, _, err := Build(context.Background(), tc.opts)
			g.Expect(err).NotTo(HaveOccurred())
			for _, ref := range idx.Objects() {
				fields, err := idx.Fields(ref)
				g.Expect(err).NotTo(HaveOccurred())
				for _, f := range fields {
					if f.Refused != "" {
						continue
					}
					if msg := checkToken(tc.opts.Root, ref, f); msg != "" {
						t.Errorf("%s %s: %s", ref, f.Pointer, msg)
					}
				}
			}
		})
	}
}

func checkToken(root string, ref ObjectRef, f Field) string {
	o := f.Origin
	data, err := os.ReadFile(filepath.Join(root, o.File))
	if err != nil {
		return "" // substituteFrom sources live outside files
	}
	lines := strings.Split(string(data), "\n")
	if o.Line < 1 || o.Line > len(lines) || o.Column < 1 || o.Column > len(lines[o.Line-1])+1 {
		return fmt.Sprintf("%s:%d:%d is outside the file", o.File, o.Line, o.Column)
	}
	text := lines[o.Line-1][o.Column-1:]
	rendered := fmt.Sprint(f.Value)
	if ref.Kind == "Secret" && strings.HasPrefix(f.Pointer, "/data/") {
		dec, _ := base64.StdEncoding.DecodeString(rendered)
		rendered = string(dec)
	}
	switch o.Kind {
	case KindGeneratorFile:
		if o.Line != 1 || o.Column != 1 || string(data) != rendered {
			return "generator file does not hold the value"
		}
		return ""
	case KindGeneratorEnv:
		key := f.Pointer[strings.LastIndex(f.Pointer, "/")+1:]
		// A bare KEY line is the key with the empty value.
		if text != key+"="+rendered && (rendered != "" || text != key) {
			return fmt.Sprintf("env line %q is not %s=%s", text, key, rendered)
		}
		return ""
	case KindGeneratorLiteral:
		key := f.Pointer[strings.LastIndex(f.Pointer, "/")+1:]
		tok := unquote(token(text))
		if !strings.HasPrefix(tok, key+"=") || unquote(strings.TrimPrefix(tok, key+"=")) != rendered {
			return fmt.Sprintf("literal %q is not %s=%s", tok, key, rendered)
		}
		return ""
	}
	tok := token(text)
	if strings.HasPrefix(tok, "|") || strings.HasPrefix(tok, ">") {
		return "" // block scalar: the value starts on the next lines
	}
	tok = unquote(tok)
	if o.Kind == KindSubstitution && strings.Contains(tok, "${"+o.Variable) {
		return "" // the variable is unset: its default sits in the source string
	}
	switch {
	case o.Kind == KindNameAffix, o.Kind == KindImages, o.Kind == KindSubstitution,
		o.Kind == KindKustomizationSpec && strings.Contains(o.Chain[len(o.Chain)-1].Via, "images"),
		o.Kind == KindKustomizationSpec && strings.Contains(o.Chain[len(o.Chain)-1].Via, "name"):
		if !strings.Contains(rendered, tok) {
			return fmt.Sprintf("%q does not contain %q at %s:%d:%d", rendered, tok, o.File, o.Line, o.Column)
		}
	case tok != rendered:
		return fmt.Sprintf("text %q at %s:%d:%d is not the value %q", tok, o.File, o.Line, o.Column, rendered)
	}
	return ""
}

// token cuts the scalar starting the text: a quoted string, or a plain
// scalar up to a comment, flow separator or end of line.
func token(text string) string {
	if text == "" {
		return ""
	}
	if q := text[0]; q == '"' || q == '\'' {
		if i := strings.IndexByte(text[1:], q); i >= 0 {
			return text[:i+2]
		}
		return text
	}
	end := len(text)
	for _, sep := range []string{" #", ", ", ",", "]", "}"} {
		if i := strings.Index(text, sep); i >= 0 && i < end {
			end = i
		}
	}
	return strings.TrimSpace(text[:end])
}
