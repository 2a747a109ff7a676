package edit

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestFileEditMove(t *testing.T) {
	tests := []struct {
		name string
		edit fileEdit
		off  int
		want int
		err  error
	}{
		{"insertion after the offset", fileEdit{at: span{10, 10}, n: 4}, 9, 9, nil},
		{"insertion at the offset pushes it down", fileEdit{at: span{10, 10}, n: 4}, 10, 14, nil},
		{"insertion before the offset", fileEdit{at: span{10, 10}, n: 4}, 20, 24, nil},
		{"longer replacement before", fileEdit{at: span{2, 5}, n: 7}, 8, 12, nil},
		{"shorter replacement before", fileEdit{at: span{2, 5}, n: 1}, 8, 6, nil},
		{"replacement ending at the offset", fileEdit{at: span{2, 5}, n: 1}, 5, 3, nil},
		{"replacement after", fileEdit{at: span{2, 5}, n: 9}, 1, 1, nil},
		{"start of a replaced token stays", fileEdit{at: span{2, 5}, n: 9}, 2, 2, nil},
		{"inside a replaced span", fileEdit{at: span{2, 5}, n: 9}, 3, 0, ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := tt.edit.move(tt.off)
			if tt.err != nil {
				g.Expect(errors.Is(err, tt.err)).To(BeTrue(), "error %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

const draftFile = "name: web\n" +
	"spec:\n" +
	"  labels: {a: one, b: two}\n" +
	"  replicas: 1\n"

func newTestDraft(t *testing.T) *draft {
	t.Helper()
	root := writeTree(t, map[string]string{"f.yaml": draftFile})
	return &draft{root: root, files: map[string][]byte{}, edits: map[string][]fileEdit{},
		patches: map[string][]map[string]interface{}{}, disk: map[string][]byte{}}
}

// TestDraftMovesPositionsAlong splices and inserts text, then finds the
// tokens the index named in the file on disk where they now are.
func TestDraftMovesPositionsAlong(t *testing.T) {
	g := NewWithT(t)
	d := newTestDraft(t)
	data, err := d.read("f.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	d.write("f.yaml", data, span{6, 9}, "website") // name: website
	data, _ = d.read("f.yaml")
	d.write("f.yaml", data, span{len("name: website\n"), len("name: website\n")}, "kind: X\n")

	tests := []struct {
		line, col int
		token     string
		wantLine  int
		wantCol   int
	}{
		{1, 7, "website", 1, 7},
		{3, 15, "one", 4, 15},
		{3, 23, "two", 4, 23},
		{4, 13, "1", 5, 13},
	}
	for _, tt := range tests {
		off, err := d.offset("f.yaml", tt.line, tt.col)
		g.Expect(err).NotTo(HaveOccurred())
		cur, _ := d.read("f.yaml")
		g.Expect(string(cur[off : off+len(tt.token)])).To(Equal(tt.token))
		line, col, err := d.locate("f.yaml", tt.line, tt.col)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect([]int{line, col}).To(Equal([]int{tt.wantLine, tt.wantCol}), tt.token)
	}

	// A flow-map value grows: the next value on the line moves right.
	off, err := d.offset("f.yaml", 3, 15)
	g.Expect(err).NotTo(HaveOccurred())
	cur, _ := d.read("f.yaml")
	d.write("f.yaml", cur, span{off, off + 3}, "uno-dos")
	off, err = d.offset("f.yaml", 3, 23)
	g.Expect(err).NotTo(HaveOccurred())
	cur, _ = d.read("f.yaml")
	g.Expect(string(cur[off : off+3])).To(Equal("two"))
	_, err = d.offset("f.yaml", 3, 16) // inside "one", rewritten
	g.Expect(errors.Is(err, ErrConflict)).To(BeTrue(), "error %v", err)
}

func TestDraftSnapshotRestore(t *testing.T) {
	g := NewWithT(t)
	d := newTestDraft(t)
	data, _ := d.read("f.yaml")
	d.write("f.yaml", data, span{6, 9}, "website")
	d.patches["p.yaml"] = append(d.patches["p.yaml"], map[string]interface{}{"a": "b"})
	undo := d.snapshot()

	data, _ = d.read("f.yaml")
	d.write("f.yaml", data, span{0, 0}, "# new\n")
	d.write("g.yaml", nil, span{0, 0}, "new file\n")
	d.patches["p.yaml"] = append(d.patches["p.yaml"], map[string]interface{}{"c": "d"})
	d.restore(undo)

	g.Expect(string(d.files["f.yaml"])).To(Equal("name: website\n" + draftFile[len("name: web\n"):]))
	g.Expect(d.files).NotTo(HaveKey("g.yaml"))
	g.Expect(d.edits["f.yaml"]).To(HaveLen(1))
	g.Expect(d.patches["p.yaml"]).To(HaveLen(1))
}

func TestAppendListItemEdits(t *testing.T) {
	tests := []struct {
		name, data, key string
		item            []string
		want            string
	}{
		{"to an existing list", "patches:\n  - path: a.yaml\nreplicas: []\n", "patches", []string{"path: b.yaml"},
			"patches:\n  - path: a.yaml\n  - path: b.yaml\nreplicas: []\n"},
		{"keeping the list's indent", "images:\n- name: a\n  newTag: \"1\"\n", "images", []string{"name: b", "newTag: \"2\""},
			"images:\n- name: a\n  newTag: \"1\"\n- name: b\n  newTag: \"2\"\n"},
		{"a new key", "resources:\n  - a.yaml\n", "images", []string{"name: b"},
			"resources:\n  - a.yaml\nimages:\n  - name: b\n"},
		{"a new key after a last line without newline", "resources:\n  - a.yaml", "images", []string{"name: b"},
			"resources:\n  - a.yaml\nimages:\n  - name: b\n"},
		{"to a list ending the file without newline", "patches:\n  - path: a.yaml", "patches", []string{"path: b.yaml"},
			"patches:\n  - path: a.yaml\n  - path: b.yaml\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			at, text := appendListItem([]byte(tt.data), tt.key, tt.item...)
			g.Expect(at.start).To(Equal(at.end), "an insertion")
			g.Expect(string(splice([]byte(tt.data), at, text))).To(Equal(tt.want))
		})
	}
}
