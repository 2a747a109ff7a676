package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// floodFigures is what BenchmarkAuditFlood measured, per half: without
// the flood (quiet) and with it.
type floodFigures struct {
	quiet, flood halfFigures
	// sent and refused count the flood's events accepted and its batches
	// answered other than 200; over is the flood's total time.
	sent, refused, failed int64
	over                  time.Duration
	firstErr              error
	// rssQuiet is reflux's VmRSS before the first flood block, memory
	// what it held after each, peak its VmHWM after the last.
	rssQuiet, peak     int64
	memory             []floodMemory
	loadStart, loadEnd float64
}

// floodMemory is reflux's memory after one flood block: VmRSS, the Go
// heap in use, and the writes its audit store holds and dropped so far.
type floodMemory struct {
	rss                   int64
	heap, writes, evicted float64
}

// halfFigures are one half's edits and reflux's processor time over it.
type halfFigures struct {
	edits []editResult
	cpu   time.Duration
	wall  time.Duration
}

func (f *floodFigures) add(flood bool, edits []editResult, cpu, wall time.Duration) {
	h := &f.quiet
	if flood {
		h = &f.flood
	}
	h.edits = append(h.edits, edits...)
	h.cpu += cpu
	h.wall += wall
}

func (f *floodFigures) addFlood(fl *flooder) {
	f.sent += fl.events.Load()
	f.refused += fl.refused.Load()
	f.failed += fl.failed.Load()
	f.over += fl.ended.Sub(fl.began)
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if f.firstErr == nil {
		f.firstErr = fl.firstErr
	}
}

func (h halfFigures) latencies() (hold, record []time.Duration, lost int) {
	for _, e := range h.edits {
		if e.held {
			hold = append(hold, e.hold)
		}
		if e.recorded {
			record = append(record, e.record)
		}
		if e.lost() {
			lost++
		}
	}
	return hold, record, lost
}

func (h halfFigures) cpuPct() float64 {
	if h.wall == 0 {
		return 0
	}
	return 100 * float64(h.cpu) / float64(h.wall)
}

func (f *floodFigures) report(b *testing.B) {
	b.ReportMetric(0, "ns/op") // one b.N iteration is the whole case
	lost := 0
	var p50, p99 [2][2]time.Duration // [quiet, flood][hold, record]
	for i, h := range []halfFigures{f.quiet, f.flood} {
		name := []string{"quiet", "flood"}[i]
		hold, record, l := h.latencies()
		lost += l
		if len(hold) == 0 || len(record) == 0 {
			continue
		}
		p50[i] = [2]time.Duration{percentile(hold, 50), percentile(record, 50)}
		p99[i] = [2]time.Duration{percentile(hold, 99), percentile(record, 99)}
		b.ReportMetric(ms(p50[i][0]), name+"-hold-p50-ms")
		b.ReportMetric(ms(p99[i][0]), name+"-hold-p99-ms")
		b.ReportMetric(ms(p50[i][1]), name+"-record-p50-ms")
		b.ReportMetric(ms(p99[i][1]), name+"-record-p99-ms")
		b.ReportMetric(h.cpuPct(), name+"-cpu-pct")
	}
	if p50[0][1] > 0 && p50[1][1] > 0 {
		b.ReportMetric(float64(p50[1][0])/float64(p50[0][0]), "hold-p50-ratio")
		b.ReportMetric(float64(p99[1][0])/float64(p99[0][0]), "hold-p99-ratio")
		b.ReportMetric(float64(p50[1][1])/float64(p50[0][1]), "record-p50-ratio")
		b.ReportMetric(float64(p99[1][1])/float64(p99[0][1]), "record-p99-ratio")
	}
	b.ReportMetric(float64(lost), "lost")
	if f.over > 0 {
		b.ReportMetric(float64(f.sent)/f.over.Seconds(), "events/s")
	}
	b.ReportMetric(float64(f.refused), "refused-batches")
	b.ReportMetric(mib(f.rssQuiet), "rss-quiet-mib")
	for i, m := range f.memory {
		b.ReportMetric(mib(m.rss), fmt.Sprintf("rss-flood%d-mib", i+1))
		b.ReportMetric(m.heap/(1<<20), fmt.Sprintf("heap-flood%d-mib", i+1))
		b.ReportMetric(m.writes, fmt.Sprintf("audit-writes-flood%d", i+1))
	}
	if n := len(f.memory); n > 1 && f.memory[0].rss > 0 {
		b.ReportMetric(float64(f.memory[n-1].rss)/float64(f.memory[0].rss), fmt.Sprintf("rss-flood%d/flood1", n))
		b.ReportMetric(f.memory[n-1].evicted, "audit-evicted")
	}
	b.ReportMetric(mib(f.peak), "rss-peak-mib")
	b.ReportMetric(f.loadStart, "load-avg-start")
	b.ReportMetric(f.loadEnd, "load-avg")
	b.Logf("audit flood: %s", f)
	if f.firstErr != nil {
		b.Logf("audit flood: %d batches failed or were refused, the first: %v", f.failed, f.firstErr)
	}
}

// String says what was measured so far, for a run that stops early too.
func (f *floodFigures) String() string {
	var parts []string
	for i, h := range []halfFigures{f.quiet, f.flood} {
		hold, record, lost := h.latencies()
		part := fmt.Sprintf("%s: %d edits, %d lost", []string{"quiet", "flood"}[i], len(h.edits), lost)
		if len(hold) > 0 && len(record) > 0 {
			part += fmt.Sprintf(", hold p50 %.1fms p99 %.1fms, record p50 %.1fms p99 %.1fms, reflux cpu %.1f%%",
				ms(percentile(hold, 50)), ms(percentile(hold, 99)), ms(percentile(record, 50)), ms(percentile(record, 99)), h.cpuPct())
		}
		parts = append(parts, part)
	}
	if f.over > 0 {
		parts = append(parts, fmt.Sprintf("flood %d events in %s (%.0f/s), %d batches refused",
			f.sent, f.over.Round(time.Millisecond), float64(f.sent)/f.over.Seconds(), f.refused))
	}
	mem := make([]string, 0, len(f.memory))
	for _, m := range f.memory {
		mem = append(mem, fmt.Sprintf("rss %.1f MiB, heap %.1f MiB, %.0f writes held, %.0f dropped",
			mib(m.rss), m.heap/(1<<20), m.writes, m.evicted))
	}
	parts = append(parts, fmt.Sprintf("rss %.1f MiB before the flood; after each flood block: %s; peak rss %.1f MiB",
		mib(f.rssQuiet), strings.Join(mem, " / "), mib(f.peak)))
	parts = append(parts, fmt.Sprintf("load %.2f -> %.2f", f.loadStart, f.loadEnd))
	return strings.Join(parts, "; ")
}
