package intake

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestAttributionWait: the looks for a late user double from half a
// second to four, so that ten of them give the audit log about half a
// minute.
func TestAttributionWait(t *testing.T) {
	g := NewWithT(t)
	var waits []time.Duration
	var total time.Duration
	for try := 1; try <= AttributionRetries; try++ {
		waits = append(waits, AttributionWait(try))
		total += AttributionWait(try)
	}
	g.Expect(waits[:4]).To(Equal([]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}))
	g.Expect(waits[AttributionRetries-1]).To(Equal(4 * time.Second))
	g.Expect(total).To(Equal(31500 * time.Millisecond))
}
