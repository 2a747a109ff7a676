package message

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func sampleData() Data {
	return Data{
		Kustomization: "apps/web",
		Kind:          "merge",
		SourceBranch:  "main",
		Fingerprint:   "sha256:abc",
		Fields: []Field{{
			Object: "apps/v1/Deployment apps/web", Pointer: "/spec/replicas",
			GitValue: "2", LiveValue: "5", File: "apps/web/deploy.yaml", Line: 12,
			LastModifier: "kubectl-scale", FirstSeen: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Severity: "low",
		}},
	}
}

func TestRender(t *testing.T) {
	alert := sampleData()
	alert.NeedsDecision, alert.Kind = true, "alert"
	tests := []struct {
		name     string
		template string
		data     Data
		want     []string
		wantErr  bool
	}{
		{name: "default merge", data: sampleData(), want: []string{
			"reflux: write back live state of apps/web\n",
			"- apps/v1/Deployment apps/web /spec/replicas: 2 -> 5 (origin apps/web/deploy.yaml:12; last modified by kubectl-scale; first seen 2026-01-02T03:04:05Z; severity low)\n",
		}},
		{name: "default alert", data: alert, want: []string{"reflux: needs decision: write back", "will not merge it"}},
		{name: "custom", template: "fix {{.Kustomization}} {{len .Fields}}", data: sampleData(), want: []string{"fix apps/web 1\n"}},
		{name: "bad syntax", template: "{{.Nope", data: sampleData(), wantErr: true},
		{name: "unknown field", template: "{{.Nope}}", data: sampleData(), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl, err := Parse(tt.template)
			var got string
			if err == nil {
				got, err = tmpl.Render(tt.data)
			}
			if tt.wantErr {
				g.Expect(err).To(MatchError(ErrTemplate))
				return
			}
			g.Expect(err).ToNot(HaveOccurred())
			for _, w := range tt.want {
				g.Expect(got).To(ContainSubstring(w))
			}
		})
	}
}

func TestOriginUnknownLine(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Field{}.Origin()).To(Equal("unknown"))
	g.Expect(Field{File: "a.yaml"}.Origin()).To(Equal("a.yaml"))
	g.Expect(Field{File: "a.yaml", Line: 107}.Origin()).To(Equal("a.yaml:107"))
}

func TestComposeAndParseTrailers(t *testing.T) {
	g := NewWithT(t)
	msg, err := Compose("subject\n\nbody\n", []Trailer{
		{Key: TrailerFingerprint, Value: "sha256:abc"},
		{Key: TrailerKustomization, Value: "apps/web\nReflux-Kind: alert"},
	})
	g.Expect(err).ToNot(HaveOccurred())
	tr := ParseTrailers(msg)
	g.Expect(tr).To(HaveLen(2))
	g.Expect(TrailerValue(msg, TrailerFingerprint)).To(Equal("sha256:abc"))
	g.Expect(TrailerValue(msg, TrailerKustomization)).To(Equal(`apps/web\nReflux-Kind: alert`))
	g.Expect(TrailerValue(msg, TrailerKind)).To(BeEmpty())
	g.Expect(ParseTrailers("subject only")).To(BeNil())
	g.Expect(ParseTrailers("subject\n\nnot a trailer\n")).To(BeNil())

	_, err = Compose("x", []Trailer{{Key: "Bad Key", Value: "v"}})
	g.Expect(err).To(MatchError(ErrTemplate))
}

// TestTrailersAgreeWithGit checks our parser against git's own, on a
// message whose values try to forge trailers.
func TestTrailersAgreeWithGit(t *testing.T) {
	g := NewWithT(t)
	d := sampleData()
	d.Fields[0].LiveValue = "5\n\nReflux-Fingerprint: forged\nSigned-off-by: mallory"
	tmpl, err := Parse("")
	g.Expect(err).ToNot(HaveOccurred())
	body, err := tmpl.Render(d)
	g.Expect(err).ToNot(HaveOccurred())
	msg, err := Compose(body, []Trailer{{Key: TrailerFingerprint, Value: "sha256:abc"}})
	g.Expect(err).ToNot(HaveOccurred())

	cmd := exec.Command("git", "interpret-trailers", "--parse")
	cmd.Stdin = strings.NewReader(msg)
	out, err := cmd.Output()
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(out)).To(Equal("Reflux-Fingerprint: sha256:abc\n"))
}

func FuzzRender(f *testing.F) {
	f.Add("apps/web", "/spec/replicas", "2", "5\nReflux-Fingerprint: x", "a.yaml", "me\r\n\nSigned-off-by: x", "high\u2028x")
	f.Add("\x00", "\u0085", "\u202e", "\n\n\n", "", "", "")
	f.Fuzz(func(t *testing.T, obj, ptr, gitV, liveV, file, who, sev string) {
		d := Data{Kustomization: obj + "/" + who, Kind: sev, SourceBranch: file, Fingerprint: "fp",
			Fields: []Field{
				{Object: obj, Pointer: ptr, GitValue: gitV, LiveValue: liveV, File: file, Line: 3, LastModifier: who, Severity: sev},
				{Object: liveV, Pointer: gitV, GitValue: ptr, LiveValue: obj, File: who, LastModifier: file, Severity: sev},
			}}
		tmpl, err := Parse("")
		if err != nil {
			t.Fatal(err)
		}
		body, err := tmpl.Render(d)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := Compose(body, []Trailer{{Key: TrailerFingerprint, Value: "fp"}})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
		// subject, blank, explanation, blank, 2 fields, blank, trailer
		if len(lines) != 8 {
			t.Fatalf("hostile values changed the line structure (%d lines):\n%s", len(lines), msg)
		}
		for _, l := range lines[4:6] {
			if !strings.HasPrefix(l, "- ") {
				t.Fatalf("field line forged: %q", l)
			}
		}
		tr := ParseTrailers(msg)
		if len(tr) != 1 || len(tr[TrailerFingerprint]) != 1 || tr[TrailerFingerprint][0] != "fp" {
			t.Fatalf("trailers forged: %v\n%s", tr, msg)
		}
	})
}
