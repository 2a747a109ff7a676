package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestSentinel(t *testing.T) {
	tests := []struct {
		name      string
		value     any
		want      any
		tokenized bool
	}{
		{"a bool is negated", true, false, false},
		{"a count stays a small number", float64(3), float64(4), false},
		{"a fraction stays a number", 0.5, 1.5, false},
		{"an int from another decoder", int64(7), float64(8), false},
		{"a numeric string stays numeric", "8080", "8081", false},
		{"a quantity keeps its unit", "512Mi", "900012Mi", true},
		{"millicores keep theirs", "100m", "900012m", true},
		{"a string keeps its text", "nginx", "nginx-rfx00012", true},
		{"a semver stays a semver", "1.27.0", "1.27.0-rfx00012", true},
		{"an empty string gets the marker alone", "", "rfx00012", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, tokenized := sentinel(12, tt.value)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(tokenized).To(Equal(tt.tokenized))
			g.Expect(sameScalar(got, tt.value)).To(BeFalse(), "a sentinel differs from the value")
		})
	}
}

func TestSentinelsAreDistinctMarkers(t *testing.T) {
	g := NewWithT(t)
	a, _ := sentinel(1, "x")
	b, _ := sentinel(12, "x")
	g.Expect(b.(string)).NotTo(ContainSubstring(a.(string)))
	g.Expect(tokenID.FindStringSubmatch("image: x-rfx00012:1.0")).To(Equal([]string{"rfx00012", "00012"}))
}
