package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

// markedAnalysis is an analysis of no chart, holding leaves and one
// baseline field, to test explain alone.
func markedAnalysis(field any, values ...any) *Analysis {
	a := &Analysis{fields: []map[string]any{{"/f": field}}}
	for i, v := range values {
		a.leaves = append(a.leaves, leaf{steps: steps("k" + string(rune('a'+i))), value: v})
		s, tok := sentinel(i, v)
		a.sentinels = append(a.sentinels, s)
		a.tokenized = append(a.tokenized, tok)
	}
	return a
}

func TestExplain(t *testing.T) {
	f := fieldRef{obj: 0, ptr: "/f"}
	tests := []struct {
		name   string
		field  any
		values []any
		set    []int
		probed any
		want   []attribution
	}{
		{name: "one marker, verbatim", field: "nginx", values: []any{"nginx"}, set: []int{0},
			probed: "nginx-rfx00000", want: []attribution{{leaf: 0, value: "nginx-rfx00000"}}},
		{name: "two markers, each alone with the other put back", field: "nginx:v1.27", values: []any{"nginx", "v1.27"}, set: []int{0, 1},
			probed: "nginx-rfx00000:v1.27-rfx00001",
			want:   []attribution{{leaf: 0, value: "nginx-rfx00000:v1.27"}, {leaf: 1, value: "nginx:v1.27-rfx00001"}}},
		{name: "a quantity", field: "512Mi", values: []any{"512Mi"}, set: []int{0},
			probed: "900000Mi", want: []attribution{{leaf: 0, value: "900000Mi"}}},
		{name: "a default put around an empty key", field: "webapp", values: []any{""}, set: []int{0},
			probed: "rfx00000"},
		{name: "a marker hidden by b64enc", field: "bmdpbng=", values: []any{"nginx"}, set: []int{0},
			probed: "bmdpbngtcmZ4MDAwMDA="},
		{name: "a marker upper-cased", field: "WEB", values: []any{"web"}, set: []int{0},
			probed: "WEB-RFX00000"},
		{name: "a marker of a key the batch did not change", field: "a", values: []any{"a", "b"}, set: []int{0},
			probed: "a-rfx00000b-rfx00001"},
		{name: "a marker tpl ran, not verbatim", field: "http://shop", values: []any{"http://{{ .Release.Name }}"}, set: []int{0},
			probed: "http://shop-rfx00000"},
		{name: "a number in place of a string", field: "nginx", values: []any{"nginx"}, set: []int{0}, probed: int64(3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a := markedAnalysis(tt.field, tt.values...)
			got, ok := a.explain(f, change{kind: changedValue, value: tt.probed}, tt.set)
			g.Expect(ok).To(Equal(tt.want != nil))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestExplainOnlyValueChanges(t *testing.T) {
	g := NewWithT(t)
	a := markedAnalysis("nginx", "nginx")
	_, ok := a.explain(fieldRef{obj: 0, ptr: "/f"}, change{kind: changedShifted, value: "nginx-rfx00000"}, []int{0})
	g.Expect(ok).To(BeFalse(), "a shifted list element is never a value the key set")
}

func TestLastName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(lastName(steps("config", "password"))).To(Equal("password"))
	g.Expect(lastName(steps("env", 0))).To(Equal("env"))
	g.Expect(lastName(steps("labels", "app.kubernetes.io/name"))).To(BeEmpty())
}
