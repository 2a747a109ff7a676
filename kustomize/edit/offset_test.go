package edit

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestOffsetOf pins how a yaml.v3 line and column (characters, 1-based)
// become a byte offset, multi-byte characters and the ends of lines and
// of the file included.
func TestOffsetOf(t *testing.T) {
	data := []byte("a: 1\nnamé: café\n\nlast: x")
	tests := []struct {
		name      string
		line, col int
		want      int
		wantErr   string
	}{
		{name: "first character", line: 1, col: 1, want: 0},
		{name: "value on the first line", line: 1, col: 4, want: 3},
		{name: "end of a line", line: 1, col: 5, want: 4},
		{name: "after a two-byte character", line: 2, col: 7, want: 5 + 7},
		{name: "a two-byte character itself", line: 2, col: 10, want: 5 + 10},
		{name: "empty line", line: 3, col: 1, want: 18},
		{name: "last line, no newline", line: 4, col: 7, want: 25},
		{name: "end of the file", line: 4, col: 8, want: 26},
		{name: "line past the end", line: 6, col: 1, wantErr: "line 6 past end of file"},
		{name: "column past the end of its line", line: 1, col: 7, wantErr: "column 7 past end of line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := offsetOf(data, tt.line, tt.col)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(tt.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// BenchmarkOffsetOf looks up, in a 500-document file, the value lines a
// burst of 100 edits in one Kustomization sets: write-back's cost per
// field before the splice. The lookup must not copy the file.
func BenchmarkOffsetOf(b *testing.B) {
	var sb strings.Builder
	for i := range 500 {
		fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  namespace: side-0\ndata:\n  VALUE: \"v-%d\"\n  LEVEL: info\n", i, i)
	}
	data := []byte(sb.String())
	b.ReportAllocs()
	for b.Loop() {
		for e := range 100 {
			// Document e*5's VALUE line: 9 lines a document, the 8th.
			if _, err := offsetOf(data, (e*5)*9+8, 10); err != nil {
				b.Fatal(err)
			}
		}
	}
}
