package bench

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestRequestsBetween(t *testing.T) {
	g := NewWithT(t)
	before := map[string]float64{"PUT drifts/status": 5, "PATCH configmaps": 100}
	after := map[string]float64{"PUT drifts/status": 1005, "PATCH configmaps": 2100, "POST drifts": 1000, "GET leases": 104,
		"POST events": 3}
	got := requestsBetween(before, after, 10)
	g.Expect(got).To(Equal([]requestCount{{"PATCH configmaps", 2000}, {"POST drifts", 1000}, {"PUT drifts/status", 1000},
		{"GET leases", 104}}), "most first, names breaking ties, and fewer than 10 left out")
	g.Expect(formatRequests(got[:2])).To(Equal("PATCH configmaps 2000; POST drifts 1000"))
}
