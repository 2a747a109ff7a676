package controllers

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// DriftMetrics are reflux's drift metrics, in the style of Flux's gotk_*
// metrics: labels name namespaces, Kustomizations, kinds, severities and
// actions, never individual objects, so cardinality stays bounded.
type DriftMetrics struct {
	Fields     *prometheus.GaugeVec
	FirstSeen  *prometheus.GaugeVec
	Held       *prometheus.GaugeVec
	Detections *prometheus.CounterVec
	Latency    *prometheus.HistogramVec

	WriteBacks        *prometheus.CounterVec
	WriteBackDuration prometheus.Histogram
	PendingBranches   *prometheus.GaugeVec
}

// NewDriftMetrics creates the collectors; register them with Collectors.
func NewDriftMetrics() *DriftMetrics {
	labels := []string{"namespace", "kustomization", "kind", "severity", "action"}
	return &DriftMetrics{
		Fields: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_drift_fields",
			Help: "Open drifted fields by Kustomization, kind, severity and action.",
		}, labels),
		FirstSeen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_drift_first_seen_timestamp_seconds",
			Help: "When the oldest open divergence in the group was first seen (unix seconds); time() minus this is its age.",
		}, labels),
		Held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_held_objects",
			Help: "Live objects reflux holds against Flux's revert.",
		}, []string{"namespace", "kustomization"}),
		Detections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reflux_drift_detections_total",
			Help: "Live changes recorded as drift.",
		}, []string{"namespace", "kustomization"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reflux_drift_detection_latency_seconds",
			Help:    "Time from a live change reaching reflux's watch to its drift record being written.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}, []string{"namespace"}),
		WriteBacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reflux_writeback_total", Help: "Write-backs by result (BranchPushed, UpToDate, Conflict, Refused, GitError, ReportOnly).",
		}, []string{"result"}),
		WriteBackDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "reflux_writeback_duration_seconds", Help: "Time from a drift set handed to write-back to its branches written.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}),
		PendingBranches: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_pending_branches", Help: "Branches reflux pushed that await review.",
		}, []string{"namespace", "kustomization"}),
	}
}

// Collectors returns every collector, for registration.
func (m *DriftMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Fields, m.FirstSeen, m.Held, m.Detections, m.Latency,
		m.WriteBacks, m.WriteBackDuration, m.PendingBranches}
}

func (m *DriftMetrics) observeDetection(ks refluxv1.KustomizationRef, seen, now time.Time) {
	if m == nil {
		return
	}
	m.Detections.WithLabelValues(ks.Namespace, ks.Name).Inc()
	if !seen.IsZero() {
		m.Latency.WithLabelValues(ks.Namespace).Observe(now.Sub(seen).Seconds())
	}
}

// forget drops a Kustomization's series.
func (m *DriftMetrics) forget(namespace, name string) {
	if m == nil {
		return
	}
	match := prometheus.Labels{"namespace": namespace, "kustomization": name}
	m.Fields.DeletePartialMatch(match)
	m.FirstSeen.DeletePartialMatch(match)
	m.Held.DeletePartialMatch(match)
	m.PendingBranches.DeletePartialMatch(match)
}

// record replaces a Kustomization's gauges with the open records' counts.
func (m *DriftMetrics) record(ks refluxv1.KustomizationRef, open []refluxv1.Drift) {
	if m == nil {
		return
	}
	match := prometheus.Labels{"namespace": ks.Namespace, "kustomization": ks.Name}
	m.Fields.DeletePartialMatch(match)
	m.FirstSeen.DeletePartialMatch(match)
	m.Held.DeletePartialMatch(match)
	type group struct{ kind, severity, action string }
	counts := map[group]int{}
	first := map[group]time.Time{}
	held := 0
	for _, d := range open {
		if d.Status.HeldSince != nil {
			held++
		}
		for _, f := range d.Spec.Fields {
			g := group{d.Spec.Object.Kind, string(f.Severity), string(f.Action)}
			counts[g]++
			seen := d.Spec.FirstSeen.Time
			if f.FirstSeen != nil {
				seen = f.FirstSeen.Time
			}
			if t, ok := first[g]; !ok || seen.Before(t) {
				first[g] = seen
			}
		}
	}
	for g, n := range counts {
		m.Fields.WithLabelValues(ks.Namespace, ks.Name, g.kind, g.severity, g.action).Set(float64(n))
		m.FirstSeen.WithLabelValues(ks.Namespace, ks.Name, g.kind, g.severity, g.action).Set(float64(first[g].Unix()))
	}
	m.Held.WithLabelValues(ks.Namespace, ks.Name).Set(float64(held))
}

func (m *DriftMetrics) observeWriteBack(result string) {
	if m != nil {
		m.WriteBacks.WithLabelValues(result).Inc()
	}
}

func (m *DriftMetrics) observeWriteBackDuration(d time.Duration) {
	if m != nil {
		m.WriteBackDuration.Observe(d.Seconds())
	}
}

func (m *DriftMetrics) setPending(namespace, name string, n int) {
	if m != nil {
		m.PendingBranches.WithLabelValues(namespace, name).Set(float64(n))
	}
}
