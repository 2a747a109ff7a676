package writeback

import (
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
)

func TestReplayFile(t *testing.T) {
	gone := file{}
	text := func(s string) file { return file{data: []byte(s), present: true} }
	const deploy = "kind: Deployment\nspec:\n  replicas: 5\n  template:\n    image: web:1.0\n"
	tests := []struct {
		name          string
		from, to, cur file
		want          file
		wantErr       string
	}{
		{name: "untouched here", from: text("a\n"), to: text("b\n"), cur: text("a\n"), want: text("b\n")},
		{name: "already here", from: text("a\n"), to: text("b\n"), cur: text("b\n"), want: text("b\n")},
		{name: "added", from: gone, to: text("new\n"), cur: gone, want: text("new\n")},
		{name: "added, exists here", from: gone, to: text("new\n"), cur: text("other\n"), wantErr: "adds the file"},
		{name: "deleted", from: text("a\n"), to: gone, cur: text("a\n"), want: gone},
		{name: "deleted, already gone", from: text("a\n"), to: gone, cur: gone, want: gone},
		{name: "deleted, changed here", from: text("a\n"), to: gone, cur: text("b\n"), wantErr: "deletes the file"},
		{name: "edited, gone here", from: text("a\n"), to: text("b\n"), cur: gone, wantErr: "is gone here"},
		{
			name: "other line than here",
			from: text(deploy),
			to:   text("kind: Deployment\nspec:\n  replicas: 5\n  template:\n    image: web:2.0\n"),
			cur:  text("kind: Deployment\nspec:\n  replicas: 2\n  template:\n    image: web:1.0\n"),
			want: text("kind: Deployment\nspec:\n  replicas: 2\n  template:\n    image: web:2.0\n"),
		},
		{
			name: "line added next to a line changed here",
			from: text(deploy),
			to:   text("kind: Deployment\nspec:\n  replicas: 5\n  paused: true\n  template:\n    image: web:1.0\n"),
			cur:  text("kind: Deployment\nspec:\n  replicas: 7\n  template:\n    image: web:1.0\n"),
			want: text("kind: Deployment\nspec:\n  replicas: 7\n  paused: true\n  template:\n    image: web:1.0\n"),
		},
		{
			name:    "same line as here",
			from:    text(deploy),
			to:      text("kind: Deployment\nspec:\n  replicas: 6\n  template:\n    image: web:1.0\n"),
			cur:     text("kind: Deployment\nspec:\n  replicas: 7\n  template:\n    image: web:1.0\n"),
			wantErr: `"  replicas: 5", which is no longer there`,
		},
		{
			name:    "context gone",
			from:    text("a: 1\nb: 2\n"),
			to:      text("a: 1\nb: 2\nc: 3\n"),
			cur:     text("something else entirely, with nothing in common\n"),
			wantErr: "does not apply",
		},
		{name: "binary", from: text("\xff\x00a"), to: text("\xff\x00b"), cur: text("\xff\x00c"), wantErr: "not text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := replayFile(tt.from, tt.to, tt.cur)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(got.present).To(Equal(tt.want.present))
			g.Expect(string(got.data)).To(Equal(string(tt.want.data)))
		})
	}
}

func TestWorktreePaths(t *testing.T) {
	g := NewWithT(t)
	g.Expect(worktreePaths([]string{"./apps/web.yaml", "apps//api.yaml"})).To(Equal([]string{"apps/web.yaml", "apps/api.yaml"}))
	g.Expect(worktreePaths(nil)).To(BeEmpty())
	for _, p := range []string{"../x", "/etc/passwd", ".git/config", ".git", "a/../../x"} {
		_, err := worktreePaths([]string{p})
		g.Expect(err).To(MatchError(ErrInvalidRequest), p)
	}
}

// FuzzPatchText checks that replaying a change onto the text it was made
// from gives the changed text, and that no input panics.
func FuzzPatchText(f *testing.F) {
	f.Add("replicas: 5\nimage: web:1.0\n", "replicas: 5\nimage: web:2.0\n", "replicas: 2\nimage: web:1.0\n")
	f.Add("a\nb\nc\n", "a\nc\n", "a\nb\nc\nd\n")
	f.Add("ü: 1\n", "ü: 2\n", "ö: 1\nü: 1\n")
	f.Fuzz(func(t *testing.T, from, to, cur string) {
		if !utf8.ValidString(from) || !utf8.ValidString(to) {
			return
		}
		if got, err := patchText(from, to, from); err != nil || got != to {
			t.Fatalf("patchText(%q, %q, from) = %q, %v", from, to, got, err)
		}
		if got, err := patchText(from, to, cur); err == nil && !utf8.ValidString(got) {
			t.Fatalf("patchText(%q, %q, %q) = invalid text %q", from, to, cur, got)
		}
	})
}
