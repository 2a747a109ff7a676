package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestValuesFilePosition(t *testing.T) {
	const text = "# sizing\nreplicaCount: 2\nresources:\n  limits:\n    memory: 256Mi\nenv:\n  - name: A\n    value: \"1\"\n\"dotted.key\": x\n"
	tests := []struct {
		name, text, pointer string
		line, column        int
		found               bool
		err                 string
	}{
		{name: "a top-level key", text: text, pointer: "/replicaCount", line: 2, column: 15, found: true},
		{name: "a nested key", text: text, pointer: "/resources/limits/memory", line: 5, column: 13, found: true},
		{name: "a list element's key", text: text, pointer: "/env/0/value", line: 8, column: 12, found: true},
		{name: "a key with a dot", text: text, pointer: "/dotted.key", line: 9, column: 15, found: true},
		{name: "a key the file does not set", text: text, pointer: "/resources/requests/cpu"},
		{name: "past a list's end", text: text, pointer: "/env/1/value"},
		{name: "an empty file sets nothing", text: "", pointer: "/replicaCount"},
		{name: "nor does one of comments", text: "# nothing yet\n", pointer: "/replicaCount"},
		{name: "a list is no values", text: "- a\n- b\n", pointer: "/0", err: "values file values.yaml is not a mapping of keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			vf := ParseValuesFile("values.yaml", []byte(tt.text))
			if tt.err != "" {
				g.Expect(vf.Err).To(MatchError(tt.err))
			} else {
				g.Expect(vf.Err).NotTo(HaveOccurred())
			}
			line, col, ok := vf.Position(tt.pointer)
			g.Expect([]any{line, col, ok}).To(Equal([]any{tt.line, tt.column, tt.found}))
		})
	}
	NewWithT(t).Expect(ParseValuesFile("values.yaml", []byte("a: [1,\n")).Err).To(MatchError(ContainSubstring("parsing values file values.yaml")))
}
