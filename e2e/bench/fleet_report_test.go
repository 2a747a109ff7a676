package bench

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// fleetFigures are one BenchmarkFleet run's measurements.
type fleetFigures struct {
	fluxApply, refluxReady time.Duration
	// rssIdle is reflux's VmRSS once quiet before the edits, rss once
	// quiet after them, peak its VmHWM then.
	rssIdle, rss, peak       int64
	spokes                   []spokeFigures
	requestsBefore, requests float64
	loadStart, loadEnd       float64
	total                    time.Duration
}

// spokeFigures are one spoke's: its live edits and the watches reflux
// held open in it after them.
type spokeFigures struct {
	name    string
	edits   []editResult
	watches watchCount
}

// stats are the spoke's edits read as BenchmarkScale reads a case's.
func (s spokeFigures) stats() scaleFigures { return scaleFigures{edits: s.edits} }

// all are every spoke's edits, as one case's.
func (f fleetFigures) all() scaleFigures {
	var all scaleFigures
	for _, s := range f.spokes {
		all.edits = append(all.edits, s.edits...)
	}
	return all
}

// report hands the figures to the testing package, spoke N's under
// spokeN- units, and logs them on one line.
func (f fleetFigures) report(b *testing.B) {
	b.ReportMetric(0, "ns/op") // one b.N iteration is a whole run: see case-s
	b.ReportMetric(f.total.Seconds(), "case-s")
	b.ReportMetric(f.fluxApply.Seconds(), "flux-apply-s")
	b.ReportMetric(f.refluxReady.Seconds(), "reflux-ready-s")
	b.ReportMetric(mib(f.rssIdle), "rss-idle-mib")
	b.ReportMetric(mib(f.rss), "rss-mib")
	b.ReportMetric(mib(f.peak), "rss-peak-mib")
	for i, s := range f.spokes {
		hold, record := s.stats().latencies()
		if len(hold) > 0 {
			b.ReportMetric(ms(percentile(hold, 50)), fmt.Sprintf("spoke%d-hold-p50-ms", i))
			b.ReportMetric(ms(percentile(hold, 99)), fmt.Sprintf("spoke%d-hold-p99-ms", i))
		}
		if len(record) > 0 {
			b.ReportMetric(ms(percentile(record, 99)), fmt.Sprintf("spoke%d-record-p99-ms", i))
		}
		b.ReportMetric(float64(s.watches.total()), fmt.Sprintf("spoke%d-watches", i))
	}
	all := f.all()
	if hold, _ := all.latencies(); len(hold) > 0 {
		b.ReportMetric(ms(percentile(hold, 99)), "hold-p99-ms")
	}
	b.ReportMetric(float64(all.lost()), "lost")
	if len(all.edits) > 0 {
		b.ReportMetric(f.requests/float64(len(all.edits)), "requests/change")
	}
	b.ReportMetric(f.loadStart, "load-avg-start")
	b.ReportMetric(f.loadEnd, "load-avg")
	b.ReportMetric(float64(runtime.NumCPU()), "cores")
	b.Logf("fleet case: %s", f)
	if lost := all.lostEdits(); lost != "" {
		b.Logf("fleet case lost edits: %s", lost)
	}
}

// String is the figures on one line, as far as they are known, for the
// log and for a failure's message.
func (f fleetFigures) String() string {
	parts := []string{
		fmt.Sprintf("flux apply %s", f.fluxApply.Round(time.Millisecond)),
		fmt.Sprintf("reflux ready %s", f.refluxReady.Round(time.Millisecond)),
		fmt.Sprintf("rss %.1f MiB idle, %.1f after the edits (peak %.1f)", mib(f.rssIdle), mib(f.rss), mib(f.peak)),
	}
	for _, s := range f.spokes {
		parts = append(parts, s.String())
	}
	parts = append(parts, fmt.Sprintf("%.0f requests over the edits", f.requests),
		fmt.Sprintf("load %.2f -> %.2f on %d cores", f.loadStart, f.loadEnd, runtime.NumCPU()))
	return strings.Join(parts, "; ")
}

// String is e.g. "spoke-000: 50 edits, 0 lost, hold p50 9.0ms p99 20.1ms
// max 20.1ms, record p99 30.2ms, watches 1 (configmaps 1)".
func (s spokeFigures) String() string {
	st := s.stats()
	hold, record := st.latencies()
	out := fmt.Sprintf("%s: %d edits, %d lost", s.name, len(s.edits), st.lost())
	if len(hold) > 0 {
		out += fmt.Sprintf(", hold p50 %.1fms p99 %.1fms max %.1fms",
			ms(percentile(hold, 50)), ms(percentile(hold, 99)), ms(slices.Max(hold)))
	}
	if len(record) > 0 {
		out += fmt.Sprintf(", record p99 %.1fms", ms(percentile(record, 99)))
	}
	if s.watches != nil {
		out += fmt.Sprintf(", watches %s", s.watches)
	}
	return out
}

// TestFleetName pins the sub-benchmark name scripts key on, and the
// fleet's shape: one Kustomization of 2,000 ConfigMaps per spoke.
func TestFleetName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(fleetCases).To(HaveLen(1))
	c := fleetCases[0]
	g.Expect(c.name()).To(Equal("spokes=3/objects-per-spoke=2000"))
	g.Expect(c.tree.configMapsPerKs()).To(Equal(2000))
	g.Expect(strings.Count(c.tree.resources(0), "\nkind: ConfigMap\n")).To(Equal(2000))
	perSpoke := map[string]int{}
	for _, tg := range spreadTargets(c.tree, c.spokes()*c.edits) {
		perSpoke[tg.Namespace]++
	}
	g.Expect(perSpoke).To(Equal(map[string]int{"spoke-000": 50, "spoke-001": 50, "spoke-002": 50}))
}

// TestCountOpenWatches counts a watch that was re-opened once, as a
// reflector's is every 5 to 10 minutes, as one.
func TestCountOpenWatches(t *testing.T) {
	g := NewWithT(t)
	ev := func(stage auditv1.Stage, resource, group string) auditv1.Event {
		return auditv1.Event{Stage: stage, Verb: "watch", ObjectRef: &auditv1.ObjectReference{Resource: resource, APIGroup: group}}
	}
	open := countOpen([]auditv1.Event{
		ev(auditv1.StageResponseStarted, "configmaps", ""),
		ev(auditv1.StageResponseStarted, "deployments", "apps"),
		ev(auditv1.StageResponseComplete, "configmaps", ""),
		ev(auditv1.StageResponseStarted, "configmaps", ""),
		ev(auditv1.StageResponseStarted, "secrets", ""),
		ev(auditv1.StageResponseComplete, "secrets", ""),
	})
	g.Expect(open).To(Equal(watchCount{"configmaps": 1, "deployments.apps": 1}))
	g.Expect(open.total()).To(Equal(2))
	g.Expect(open.String()).To(Equal("2 (configmaps 1, deployments.apps 1)"))
}

// TestFleetFiguresReadPerSpoke checks each spoke's line reads its own
// edits, and the lost ones count over all.
func TestFleetFiguresReadPerSpoke(t *testing.T) {
	g := NewWithT(t)
	f := fleetFigures{spokes: []spokeFigures{
		{name: "spoke-000", edits: []editResult{{held: true, recorded: true, hold: time.Millisecond, record: 2 * time.Millisecond}},
			watches: watchCount{"configmaps": 1}},
		{name: "spoke-001", edits: []editResult{{target: target{"ConfigMap", "spoke-001", "x"}, held: true, hold: 5 * time.Millisecond}}},
	}}
	g.Expect(f.all().lost()).To(Equal(1))
	g.Expect(f.spokes[0].String()).To(Equal("spoke-000: 1 edits, 0 lost, hold p50 1.0ms p99 1.0ms max 1.0ms, record p99 2.0ms, watches 1 (configmaps 1)"))
	g.Expect(f.spokes[1].String()).To(Equal("spoke-001: 1 edits, 1 lost, hold p50 5.0ms p99 5.0ms max 5.0ms"))
}
