package message

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"
	"unicode"
)

// ErrTemplate is returned when a template cannot be parsed or executed.
var ErrTemplate = errors.New("invalid commit message template")

// DefaultTemplate is the commit message body used unless configured
// otherwise. The subject stays short; the body has one line per field.
const DefaultTemplate = `reflux: {{if .NeedsDecision}}needs decision: {{end}}write back live state of {{.Kustomization}}

{{if .NeedsDecision}}This change needs a human decision; reflux will not merge it.
{{else}}Git is updated to match what runs in the cluster.
{{end}}
{{range .Fields -}}
- {{.Object}} {{.Pointer}}: {{.GitValue}} -> {{.LiveValue}} (origin {{.Origin}}; last modified by {{.LastModifier}}; first seen {{date .FirstSeen}}; severity {{.Severity}})
{{end}}`

// maxValue bounds one rendered value so a huge live object cannot produce a
// multi-megabyte commit message.
const maxValue = 256

// Template is a parsed commit message template.
type Template struct {
	t *template.Template
}

// Parse parses a commit message template; an empty text means
// DefaultTemplate.
func Parse(text string) (*Template, error) {
	if strings.TrimSpace(text) == "" {
		text = DefaultTemplate
	}
	t, err := template.New("commit").Option("missingkey=error").Funcs(template.FuncMap{
		"date": date,
	}).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	return &Template{t: t}, nil
}

// Render executes the template on a sanitised copy of d. The result never
// ends with a trailer block of its own; see Compose.
func (t *Template) Render(d Data) (string, error) {
	var buf bytes.Buffer
	if err := t.t.Execute(&buf, sanitizeData(d)); err != nil {
		return "", fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	return strings.TrimRight(buf.String(), "\n") + "\n", nil
}

func date(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

func sanitizeData(d Data) Data {
	out := d
	out.Kustomization = Escape(d.Kustomization)
	out.Kind = Escape(d.Kind)
	out.SourceBranch = Escape(d.SourceBranch)
	out.Fingerprint = Escape(d.Fingerprint)
	out.Fields = make([]Field, len(d.Fields))
	for i, f := range d.Fields {
		f.Object = Escape(f.Object)
		f.Pointer = Escape(f.Pointer)
		f.GitValue = Escape(f.GitValue)
		f.LiveValue = Escape(f.LiveValue)
		f.File = Escape(f.File)
		f.LastModifier = Escape(f.LastModifier)
		f.Severity = Escape(f.Severity)
		out.Fields[i] = f
	}
	return out
}

// Escape makes s safe to place inside one line of a commit message: line
// breaks and other control or invisible format characters become Go-style
// escapes, and long values are cut with an ellipsis.
func Escape(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= maxValue {
			b.WriteString("…")
			break
		}
		n++
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == unicode.ReplacementChar, unicode.IsControl(r), unicode.Is(unicode.Cf, r),
			unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
