package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// sideFigures are one BenchmarkSideBySide case's measurements.
type sideFigures struct {
	fluxRevert, refluxHold, refluxRecord []time.Duration
	fluxReqPerMin, refluxReqPerMin       float64
	cpuPct                               float64
	rss, peak                            int64

	burstRan             bool
	burstSend, burstLive time.Duration
	burstInGit           time.Duration
	burstLostLive        []string
	burstGit             gitOutcome
	burstPushes          int
	burstWritebacks      float64
	burstEdits           burstTimes
	burstTimeline        []burstSample
	loadWindow, load     float64
}

// report hands the figures to the testing package and logs them on one
// "side-by-side case" line, which hack/bench.sh copies into
// bench/results.md.
func (f sideFigures) report(b *testing.B, c sideCase) {
	b.ReportMetric(0, "ns/op") // one iteration is a whole case
	parts := []string{c.name()}
	if len(f.fluxRevert) > 0 && len(f.refluxRecord) > 0 {
		revert, record := mean(f.fluxRevert), percentile(f.refluxRecord, 50)
		b.ReportMetric(revert.Seconds(), "flux-revert-s-mean")
		b.ReportMetric(ms(percentile(f.refluxHold, 50)), "reflux-hold-ms-p50")
		b.ReportMetric(ms(record), "reflux-record-ms-p50")
		b.ReportMetric(ms(slices.Max(f.refluxRecord)), "reflux-record-ms-max")
		b.ReportMetric(float64(revert)/float64(record), "revert-over-record")
		parts = append(parts, fmt.Sprintf("kustomize-controller reverts in %s mean (%s, 1m interval); reflux holds in %s p50, records in %s p50 (max %s); ratio %.0fx",
			revert.Round(time.Millisecond), durations(f.fluxRevert), percentile(f.refluxHold, 50).Round(time.Millisecond),
			record.Round(time.Millisecond), slices.Max(f.refluxRecord).Round(time.Millisecond), float64(revert)/float64(record)))
	}
	b.ReportMetric(f.fluxReqPerMin, "flux-req-per-min")
	b.ReportMetric(f.refluxReqPerMin, "reflux-req-per-min")
	b.ReportMetric(f.cpuPct, "reflux-cpu-pct")
	b.ReportMetric(mib(f.rss), "reflux-rss-mib")
	b.ReportMetric(mib(f.peak), "reflux-rss-peak-mib")
	b.ReportMetric(f.loadWindow, "load-avg-window")
	parts = append(parts, fmt.Sprintf("no drift, %s window: kustomize-controller %.0f requests/min, reflux %.1f; reflux cpu %.2f%%, rss %.1f MiB (peak %.1f); load %.2f",
		sideIdleWindow, f.fluxReqPerMin, f.refluxReqPerMin, f.cpuPct, mib(f.rss), mib(f.peak), f.loadWindow))
	if f.burstRan {
		total, most := 0, 0
		for _, n := range f.burstGit.commits {
			total += n
			most = max(most, n)
		}
		b.ReportMetric(f.burstSend.Seconds(), "burst-send-s")
		b.ReportMetric(f.burstLive.Seconds(), "burst-all-held-s")
		b.ReportMetric(float64(total), "burst-commits")
		b.ReportMetric(float64(most), "burst-commits-max-per-ks")
		b.ReportMetric(float64(f.burstPushes), "burst-pushes")
		b.ReportMetric(f.burstWritebacks, "burst-writebacks")
		b.ReportMetric(float64(len(f.burstLostLive)), "burst-lost-live")
		b.ReportMetric(float64(len(f.burstGit.missing)), "burst-lost-git")
		b.ReportMetric(f.burstEdits.heldLast.Seconds(), "burst-held-last-s")
		b.ReportMetric(f.burstEdits.recordedLast.Seconds(), "burst-recorded-last-s")
		b.ReportMetric(float64(f.burstEdits.unseen), "burst-unseen")
		if len(f.burstEdits.held) > 0 {
			b.ReportMetric(ms(percentile(f.burstEdits.held, 99)), "burst-hold-ms-p99")
			b.ReportMetric(ms(percentile(f.burstEdits.recorded, 99)), "burst-record-ms-p99")
			parts = append(parts, fmt.Sprintf("burst, each edit from its acknowledgement: held p50 %s p99 %s, recorded p50 %s p99 %s; the last held %s and the last recorded %s after the last acknowledgement; %d not seen by the watches",
				percentile(f.burstEdits.held, 50).Round(time.Millisecond), percentile(f.burstEdits.held, 99).Round(time.Millisecond),
				percentile(f.burstEdits.recorded, 50).Round(time.Millisecond), percentile(f.burstEdits.recorded, 99).Round(time.Millisecond),
				f.burstEdits.heldLast.Round(time.Millisecond), f.burstEdits.recordedLast.Round(time.Millisecond), f.burstEdits.unseen))
		}
		if len(f.burstTimeline) > 0 {
			// A file, not the log: the testing package cuts a benchmark's
			// log short, and the table is what bench/results.md shows.
			if path, err := writeTimeline(f.burstTimeline); err != nil {
				b.Logf("the burst timeline was not written: %v", err)
			} else {
				b.Logf("burst timeline (every %s from the first edit sent): %s", burstSampleEvery, path)
			}
		}
		parts = append(parts, fmt.Sprintf("burst of %d edits sent in %s over %d Kustomizations: all held and recorded %s after, lost live %d; on branches %s after, lost in git %d; %d commits (at most %d per Kustomization, per Kustomization %v) on %d branches, %d pushes, %.0f write-back runs",
			burstEdits, f.burstSend.Round(time.Millisecond), c.kustomizations, f.burstLive.Round(time.Second), len(f.burstLostLive),
			f.burstInGit.Round(time.Second), len(f.burstGit.missing), total, most, f.burstGit.commits, f.burstGit.branches, f.burstPushes, f.burstWritebacks))
	}
	b.ReportMetric(f.load, "load-avg")
	b.Logf("side-by-side case: %s; load at the end %.2f", strings.Join(parts, "; "), f.load)
	if lost := append(slices.Clone(f.burstLostLive), f.burstGit.missing...); len(lost) > 0 {
		b.Errorf("burst lost %d edits: %s", len(lost), strings.Join(lost[:min(10, len(lost))], ", "))
	}
}

func (f sideFigures) String() string {
	return fmt.Sprintf("flux reverts %v; reflux holds %v records %v; req/min flux %.0f reflux %.1f; burst sent in %s",
		f.fluxRevert, f.refluxHold, f.refluxRecord, f.fluxReqPerMin, f.refluxReqPerMin, f.burstSend)
}

func durations(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.Round(100*time.Millisecond).String())
	}
	return strings.Join(s, " ")
}
