package message

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func manyFields(n int) Data {
	d := sampleData()
	f := d.Fields[0]
	d.Fields = nil
	for i := 0; i < n; i++ {
		f.LiveValue = strings.Repeat("v", 200)
		d.Fields = append(d.Fields, f)
	}
	return d
}

// TestTemplateBounds: a policy's template is input. Each hostile one must
// fail with ErrTemplate and a cause, quickly and in bounded memory; the
// ordinary ones must still render.
func TestTemplateBounds(t *testing.T) {
	cases := []struct {
		name, text string
		data       Data
		wantErr    string // "" when the template must render
		want       string // a substring of the rendered message
	}{
		{name: "printf with an ordinary width", text: `{{printf "%-8s|%5.2f" .Kustomization 1.5}}`, data: sampleData(), want: "apps/web| 1.50"},
		{name: "printf of a percent sign", text: `{{printf "100%% of %s" .Kustomization}}`, data: sampleData(), want: "100% of apps/web"},
		{name: "printf padding to a gigabyte", text: `{{printf "%0999999999d" 1}}`, data: sampleData(), wantErr: "width or precision over 256"},
		{name: "printf with a huge precision", text: `{{printf "%.999999999f" 1.0}}`, data: sampleData(), wantErr: "width or precision over 256"},
		{name: "printf with a star width", text: `{{printf "%*d" 999999999 1}}`, data: sampleData(), wantErr: "'*' widths are not allowed"},
		{name: "nested ranges past the bound", text: `{{range .Fields}}{{range $.Fields}}{{range $.Fields}}{{.LiveValue}}{{end}}{{end}}{{end}}`, data: manyFields(20), wantErr: "message longer than"},
		{name: "one range of many fields stays under it", text: `{{range .Fields}}{{.Pointer}}{{end}}`, data: manyFields(20), want: "/spec/replicas/spec/replicas"},
		{name: "unbounded recursion", text: `{{define "a"}}x{{template "a"}}{{end}}{{template "a"}}`, data: sampleData(), wantErr: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse(tc.text)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			start := time.Now()
			got, err := tmpl.Render(tc.data)
			if tc.name == "unbounded recursion" {
				// Either text/template's depth limit or our length bound
				// stops it; which one comes first depends on the text.
				if !errors.Is(err, ErrTemplate) {
					t.Fatalf("rendered %d bytes without error", len(got))
				}
				return
			}
			if tc.wantErr != "" {
				if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want ErrTemplate with %q", err, tc.wantErr)
				}
				if d := time.Since(start); d > 30*time.Second {
					t.Fatalf("refusing took %v", d)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("rendered %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

func TestBoundedSprintfMatchesSprintf(t *testing.T) {
	for _, f := range []string{"%s", "%5d", "%-10v", "%+.3f", "%[2]s-%[1]s", "%x", "%%", "no verbs", "%#v", "% d", "%256s"} {
		got, err := boundedSprintf(f, "a", "b")
		if err != nil {
			t.Fatalf("%q refused: %v", f, err)
		}
		if want := fmt.Sprintf(f, "a", "b"); got != want {
			t.Fatalf("%q: got %q, want %q", f, got, want)
		}
	}
}

// FuzzTemplate parses and renders arbitrary template text: either step
// may refuse, but neither may panic, hang or render past MaxMessage.
func FuzzTemplate(f *testing.F) {
	f.Add(DefaultTemplate, uint8(3))
	f.Add(`{{range .Fields}}{{range $.Fields}}{{.LiveValue}}{{end}}{{end}}`, uint8(40))
	f.Add(`{{printf "%09999d" 1}}`, uint8(1))
	f.Add(`{{define "a"}}{{template "a"}}{{end}}{{template "a"}}`, uint8(1))
	f.Fuzz(func(t *testing.T, text string, n uint8) {
		tmpl, err := Parse(text)
		if err != nil {
			if !errors.Is(err, ErrTemplate) {
				t.Fatalf("parse error %v does not wrap ErrTemplate", err)
			}
			return
		}
		got, err := tmpl.Render(manyFields(int(n % 64)))
		if err != nil {
			if !errors.Is(err, ErrTemplate) {
				t.Fatalf("render error %v does not wrap ErrTemplate", err)
			}
			return
		}
		if len(got) > MaxMessage+1 {
			t.Fatalf("rendered %d bytes, over the %d bound", len(got), MaxMessage)
		}
	})
}
