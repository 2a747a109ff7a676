package bench

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestFormatTimelineLeavesOutRowsWhereNothingMoved keeps the first row,
// every row where a queue or a count moved, and the last, so a long
// quiet tail takes one line.
func TestFormatTimelineLeavesOutRowsWhereNothingMoved(t *testing.T) {
	g := NewWithT(t)
	s := func(at float64, live, hold float64, held, recorded int, req float64) burstSample {
		return burstSample{at: time.Duration(at * float64(time.Second)), live: live, hold: hold, held: held, recorded: recorded, requests: req}
	}
	out := formatTimeline([]burstSample{
		s(0, 0, 0, 0, 0, 0),
		s(0.5, 300, 10, 20, 5, 80),
		s(1.0, 300, 10, 20, 5, 81), // only requests moved: left out
		s(1.5, 0, 0, 1000, 1000, 4000),
		s(2.0, 0, 0, 1000, 1000, 4010),
		s(2.5, 0, 0, 1000, 1000, 4020),
	})
	rows := strings.Split(strings.TrimSpace(out), "\n")
	g.Expect(rows).To(HaveLen(2 + 4))
	g.Expect(rows[2]).To(Equal("| 0.0 | 0 | 0 | 0 | 0 | 0 |"))
	g.Expect(rows[3]).To(Equal("| 0.5 | 300 | 10 | 20 | 5 | 80 |"))
	g.Expect(rows[4]).To(Equal("| 1.5 | 0 | 0 | 1000 | 1000 | 4000 |"))
	g.Expect(rows[5]).To(Equal("| 2.5 | 0 | 0 | 1000 | 1000 | 4020 |"))
}
