package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestClassify(t *testing.T) {
	val := func(leaf int, inUser bool, value, sentinel, probed any) outcome {
		return outcome{leaf: leaf, inUser: inUser, value: value, sentinel: sentinel,
			change: change{kind: changedValue, value: probed}}
	}
	cond := func(leaf int, k changeKind) outcome {
		return outcome{leaf: leaf, change: change{kind: k}}
	}
	tests := []struct {
		name       string
		field      any
		outs       []outcome
		kind       Kind
		keys       []int
		conditions []int
	}{
		{name: "no key changes it", field: int64(10), kind: KindTemplateLiteral},
		{name: "a gate alone still leaves a literal", field: "sidecar",
			outs: []outcome{cond(4, changedGone)}, kind: KindTemplateLiteral, conditions: []int{4}},
		{name: "the release's key, exactly", field: int64(3),
			outs: []outcome{val(1, true, float64(3), float64(4), int64(4)), cond(0, changedGone)},
			kind: KindValues, keys: []int{1}, conditions: []int{0}},
		{name: "a chart default, quoted", field: "80",
			outs: []outcome{val(2, false, float64(80), float64(81), "81")}, kind: KindChartDefault, keys: []int{2}},
		{name: "a quantity through toYaml", field: "512Mi",
			outs: []outcome{val(3, true, "512Mi", "900003Mi", "900003Mi")}, kind: KindValues, keys: []int{3}},
		{name: "repository and tag make it", field: "nginx:1.27",
			outs: []outcome{val(5, false, "nginx", "nginx-rfx00005", "nginx-rfx00005:1.27"),
				val(6, true, "1.27", "1.27-rfx00006", "nginx:1.27-rfx00006")},
			kind: KindComputed, keys: []int{5, 6}},
		{name: "transformed", field: "Y2hhbmdlbWU=",
			outs: []outcome{val(7, false, "changeme", "changeme-rfx00007", "Y2hhbmdlbWUtcmZ4MDAwMDc=")},
			kind: KindComputed, keys: []int{7}},
		{name: "the template's default stands in for an empty key", field: "webapp",
			outs: []outcome{val(8, false, "", "rfx00008", "rfx00008")}, kind: KindComputed, keys: []int{8}},
		{name: "a shifted element is a condition, not a value", field: "app:1",
			outs: []outcome{{leaf: 9, change: change{kind: changedShifted, value: "init:1"}}},
			kind: KindTemplateLiteral, conditions: []int{9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v := classify(tt.field, tt.outs)
			g.Expect(v.kind).To(Equal(tt.kind))
			g.Expect(leafIDs(v.keys)).To(Equal(tt.keys))
			g.Expect(leafIDs(v.conditions)).To(Equal(tt.conditions))
		})
	}
}

func leafIDs(outs []outcome) []int {
	var ids []int
	for _, o := range outs {
		ids = append(ids, o.leaf)
	}
	return ids
}

func TestSameScalar(t *testing.T) {
	tests := []struct {
		field, value any
		want         bool
	}{
		{int64(3), float64(3), true},
		{"3", float64(3), true},
		{int64(8080), "8080", true},
		{"true", true, true},
		{"512Mi", "512Mi", true},
		{"512Mi", "256Mi", false},
		{nil, "<nil>", false},
		{map[string]any{}, "map[]", false},
	}
	for _, tt := range tests {
		NewWithT(t).Expect(sameScalar(tt.field, tt.value)).To(Equal(tt.want), "%#v vs %#v", tt.field, tt.value)
	}
}
