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

// MaxMessage bounds a rendered message. A template is policy input: one
// that ranges over the fields inside a range over the fields, or pads a
// value to a gigabyte, must fail with a cause instead of taking reflux's
// memory. 64 KiB is far more than any reviewer reads.
const MaxMessage = 64 << 10

// maxWidth bounds a printf width or precision, for the same reason: fmt
// allocates the padded string before the writer could refuse it.
const maxWidth = 256

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
		"date":   date,
		"printf": boundedSprintf,
	}).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	return &Template{t: t}, nil
}

// Render executes the template on a sanitised copy of d. The result never
// ends with a trailer block of its own; see Compose.
func (t *Template) Render(d Data) (string, error) {
	buf := &limitedBuffer{max: MaxMessage}
	if err := t.t.Execute(buf, sanitizeData(d)); err != nil {
		return "", fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	return strings.TrimRight(buf.String(), "\n") + "\n", nil
}

// errTooLong is what limitedBuffer's writes fail with.
var errTooLong = fmt.Errorf("message longer than %d bytes", MaxMessage)

// limitedBuffer fails the write that would take it past max, which stops
// the template's execution there.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errTooLong
	}
	return b.Buffer.Write(p)
}

// boundedSprintf is text/template's printf with widths and precisions
// (literal or '*') bounded by maxWidth.
func boundedSprintf(format string, args ...interface{}) (string, error) {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		n := 0
		for i++; i < len(format); i++ {
			c := format[i]
			switch {
			case c >= '0' && c <= '9':
				n = min(n*10+int(c-'0'), maxWidth+1)
			case c == '*':
				return "", fmt.Errorf("printf %q: '*' widths are not allowed", format)
			case c == '.':
				n = 0
			case strings.IndexByte("+-# []", c) >= 0:
			default:
				c = 0
			}
			if n > maxWidth {
				return "", fmt.Errorf("printf %q: width or precision over %d", format, maxWidth)
			}
			if c == 0 {
				break
			}
		}
	}
	return fmt.Sprintf(format, args...), nil
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
		f.Record = Escape(f.Record)
		f.Rule = Escape(f.Rule)
		f.Manager = Escape(f.Manager)
		f.User = Escape(f.User)
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
