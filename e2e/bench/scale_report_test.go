package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// scaleFigures are one BenchmarkScale case's measurements.
type scaleFigures struct {
	fluxApply, refluxReady time.Duration
	idleCPU                float64
	rss, peak              int64
	edits                  []editResult
	// requestsBefore is reflux's request count before the first edit;
	// requests those it made from then until it was quiet again.
	requestsBefore, requests float64
	buildsPerRevision        float64
	buildsKnown              bool
	loadStart, loadEnd       float64
	total                    time.Duration
}

// report hands the figures to the testing package under the unit names
// scripts reading bench/results.md key on, and logs them on one line.
func (f scaleFigures) report(b *testing.B) {
	b.ReportMetric(0, "ns/op") // one b.N iteration is a whole case: see case-s
	b.ReportMetric(f.total.Seconds(), "case-s")
	b.ReportMetric(f.fluxApply.Seconds(), "flux-apply-s")
	b.ReportMetric(f.refluxReady.Seconds(), "reflux-ready-s")
	b.ReportMetric(f.idleCPU, "idle-cpu-pct")
	b.ReportMetric(mib(f.rss), "rss-mib")
	b.ReportMetric(mib(f.peak), "rss-peak-mib")
	hold, record := f.latencies()
	if len(hold) > 0 {
		b.ReportMetric(ms(percentile(hold, 50)), "hold-p50-ms")
		b.ReportMetric(ms(percentile(hold, 99)), "hold-p99-ms")
	}
	if len(record) > 0 {
		b.ReportMetric(ms(percentile(record, 50)), "record-p50-ms")
		b.ReportMetric(ms(percentile(record, 99)), "record-p99-ms")
	}
	b.ReportMetric(float64(f.lost()), "lost")
	if len(f.edits) > 0 {
		b.ReportMetric(f.requests/float64(len(f.edits)), "requests/change")
	}
	if f.buildsKnown {
		b.ReportMetric(f.buildsPerRevision, "builds/revision")
	}
	b.ReportMetric(f.loadStart, "load-avg-start")
	b.ReportMetric(f.loadEnd, "load-avg")
	b.Logf("scale case: %s", f)
	if lost := f.lostEdits(); lost != "" {
		b.Logf("scale case lost edits: %s", lost)
	}
}

// latencies are the hold and record latencies of the edits that got them
// within lostAfter.
func (f scaleFigures) latencies() (hold, record []time.Duration) {
	for _, e := range f.edits {
		if e.held {
			hold = append(hold, e.hold)
		}
		if e.recorded {
			record = append(record, e.record)
		}
	}
	return hold, record
}

func (f scaleFigures) lost() int {
	n := 0
	for _, e := range f.edits {
		if e.lost() {
			n++
		}
	}
	return n
}

// lostEdits names up to ten lost edits and what each missed.
func (f scaleFigures) lostEdits() string {
	var parts []string
	for _, e := range f.edits {
		if !e.lost() || len(parts) == 10 {
			continue
		}
		var missed []string
		if !e.held {
			missed = append(missed, "hold")
		}
		if !e.recorded {
			missed = append(missed, "record")
		}
		parts = append(parts, fmt.Sprintf("%s (no %s)", e.target, strings.Join(missed, ", no ")))
	}
	return strings.Join(parts, "; ")
}

// String is the figures on one line, as far as they are known, for the log
// and for a failure's message.
func (f scaleFigures) String() string {
	hold, record := f.latencies()
	parts := []string{
		fmt.Sprintf("flux apply %s", f.fluxApply.Round(time.Millisecond)),
		fmt.Sprintf("reflux ready %s", f.refluxReady.Round(time.Millisecond)),
		fmt.Sprintf("idle cpu %.2f%%", f.idleCPU),
		fmt.Sprintf("rss %.1f MiB (peak %.1f)", mib(f.rss), mib(f.peak)),
		fmt.Sprintf("%d edits, %d lost", len(f.edits), f.lost()),
	}
	if len(hold) > 0 {
		parts = append(parts, fmt.Sprintf("hold p50 %.1fms p99 %.1fms max %.1fms",
			ms(percentile(hold, 50)), ms(percentile(hold, 99)), ms(slices.Max(hold))))
	}
	if len(record) > 0 {
		parts = append(parts, fmt.Sprintf("record p50 %.1fms p99 %.1fms max %.1fms",
			ms(percentile(record, 50)), ms(percentile(record, 99)), ms(slices.Max(record))))
	}
	if len(f.edits) > 0 {
		parts = append(parts, fmt.Sprintf("%.0f requests over the edits", f.requests))
	}
	parts = append(parts, fmt.Sprintf("load %.2f -> %.2f", f.loadStart, f.loadEnd))
	return strings.Join(parts, "; ")
}

func TestFiguresCountLostEdits(t *testing.T) {
	g := NewWithT(t)
	f := scaleFigures{edits: []editResult{
		{target: target{"ConfigMap", "a", "x"}, held: true, recorded: true, hold: time.Millisecond, record: 2 * time.Millisecond},
		{target: target{"ConfigMap", "a", "y"}, held: true, hold: 3 * time.Millisecond},
		{target: target{"ConfigMap", "b", "z"}},
	}}
	g.Expect(f.lost()).To(Equal(2))
	g.Expect(f.lostEdits()).To(Equal("ConfigMap/a/y (no record); ConfigMap/b/z (no hold, no record)"))
	hold, record := f.latencies()
	g.Expect(hold).To(HaveLen(2))
	g.Expect(record).To(HaveLen(1))
	g.Expect(f.String()).To(ContainSubstring("3 edits, 2 lost"))
}
