package metrics

import (
	"fmt"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
)

// Metrics are reflux's own metrics, in the style of Flux's gotk_*
// metrics: labels name namespaces, Kustomizations, kinds, severities and
// actions, never individual objects, so cardinality stays bounded. The
// drift metrics also carry a team, read from a Kustomization label (see
// WithTeamLabel): one value per Kustomization, so it adds no series. A nil
// *Metrics records nothing.
type Metrics struct {
	Fields     *prometheus.GaugeVec
	FirstSeen  *prometheus.GaugeVec
	Held       *prometheus.GaugeVec
	Detections *prometheus.CounterVec
	Hotfixes   *prometheus.CounterVec
	Latency    *prometheus.HistogramVec
	Parked     *prometheus.GaugeVec
	DryRuns    *prometheus.CounterVec

	RenderDuration    *prometheus.HistogramVec
	RenderBuilds      *prometheus.CounterVec
	BuildsPerRevision *prometheus.GaugeVec

	WriteBacks        *prometheus.CounterVec
	WriteBackDuration prometheus.Histogram
	PendingBranches   *prometheus.GaugeVec
	PullRequests      *prometheus.GaugeVec
	// HoldExpired counts records whose hold reached its maximum age
	// (see metrics_expiry.go).
	HoldExpired *prometheus.GaugeVec

	// teamLabel is the Kustomization label whose value is the team label.
	teamLabel string
}

// Option configures New.
type Option func(*Metrics)

// WithTeamLabel names the Kustomization label (for example "team") whose
// value becomes the team label of the drift metrics. Without it, or on a
// Kustomization without that label, team is empty.
func WithTeamLabel(key string) Option {
	return func(m *Metrics) { m.teamLabel = key }
}

// New creates the collectors; register them with Collectors. A team
// label that is not a valid Kubernetes label key is an error.
func New(opts ...Option) (*Metrics, error) {
	drift := []string{"namespace", "kustomization", "team", "kind", "severity", "action"}
	ks := []string{"namespace", "kustomization"}
	m := &Metrics{
		Fields: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_drift_fields", Help: "Open drifted fields by Kustomization, team, kind, severity and action.",
		}, drift),
		FirstSeen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_drift_first_seen_timestamp_seconds",
			Help: "When the oldest open divergence in the group was first seen (unix seconds); time() minus this is its age.",
		}, drift),
		Held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_held_objects", Help: "Live objects reflux holds against Flux's revert.",
		}, []string{"namespace", "kustomization", "team"}),
		Detections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reflux_drift_detections_total", Help: "Live changes recorded as drift.",
		}, []string{"namespace", "kustomization", "team"}),
		Hotfixes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reflux_manual_hotfixes_total",
			Help: "Objects newly marked as manual hotfixes (the break-glass annotation), by Kustomization namespace and team.",
		}, []string{"namespace", "team"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reflux_drift_detection_latency_seconds",
			Help:    "Time from a live change reaching reflux's watch to its drift record being written.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 30, 120},
		}, []string{"namespace"}),
		Parked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_live_changes_waiting",
			Help: "Live changes kept until the render of the applied revision is current.",
		}, ks),
		DryRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reflux_dry_runs_total", Help: "Server-side dry-run applies made to detect drift, by path (live or resync).",
		}, []string{"path"}),
		RenderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reflux_render_duration_seconds",
			Help:    "Time to fetch, build and index a revision of a Kustomization.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600},
		}, []string{"namespace"}),
		RenderBuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reflux_render_builds_total", Help: "Kustomize builds of Kustomizations' revisions (the source's, often before Flux applies them), by Kustomization and result.",
		}, []string{"namespace", "kustomization", "result"}),
		BuildsPerRevision: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_render_builds_per_revision", Help: "Kustomize builds of the Kustomization's current applied revision; 1 when all is well.",
		}, ks),
		WriteBacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reflux_writeback_total", Help: "Write-backs by result (BranchPushed, UpToDate, Conflict, Refused, GitError, ReportOnly).",
		}, []string{"result"}),
		WriteBackDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "reflux_writeback_duration_seconds", Help: "Time one write-back run takes: branch checks, edits, verification, commit and push.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}),
		PendingBranches: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_pending_branches", Help: "Branches reflux pushed that await review.",
		}, ks),
		PullRequests: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reflux_pull_requests",
			Help: "Pull requests of reflux's branches by state (open, merged, closed) as of the Kustomization's last branch check.",
		}, append(ks, "state")),
		HoldExpired: newHoldExpired(),
	}
	for _, o := range opts {
		o(m)
	}
	if m.teamLabel != "" {
		if errs := validation.IsQualifiedName(m.teamLabel); len(errs) > 0 {
			return nil, fmt.Errorf("team label %q is not a label key: %s", m.teamLabel, strings.Join(errs, "; "))
		}
	}
	return m, nil
}

// Collectors returns every collector, for registration.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Fields, m.FirstSeen, m.Held, m.Detections, m.Hotfixes, m.Latency, m.Parked, m.DryRuns,
		m.RenderDuration, m.RenderBuilds, m.BuildsPerRevision, m.WriteBacks, m.WriteBackDuration, m.PendingBranches, m.PullRequests, m.HoldExpired}
}

// TeamOf is the team of a Kustomization with labels: the value of its
// label key, or "" when key is unset or the label absent. The value is a
// Kubernetes label value, so it is short and the apiserver validated it;
// it names a team, never an object, so cardinality stays bounded.
func TeamOf(key string, labels map[string]string) string {
	if key == "" {
		return ""
	}
	return labels[key]
}

func (m *Metrics) team(ks *kustomizev1.Kustomization) string {
	if ks == nil {
		return ""
	}
	return TeamOf(m.teamLabel, ks.Labels)
}

// ObserveRender records one build (desired.Observer).
func (m *Metrics) ObserveRender(ks types.NamespacedName, _ string, took time.Duration, err error) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "failure"
	}
	m.RenderBuilds.WithLabelValues(ks.Namespace, ks.Name, result).Inc()
	m.RenderDuration.WithLabelValues(ks.Namespace).Observe(took.Seconds())
}

// SetBuildsPerRevision records the builds of a Kustomization's revision.
func (m *Metrics) SetBuildsPerRevision(ks types.NamespacedName, n int) {
	if m != nil {
		m.BuildsPerRevision.WithLabelValues(ks.Namespace, ks.Name).Set(float64(n))
	}
}

// ObserveDetection counts a live change recorded as drift of ks, and how
// long it took from the watch seeing it (seen; zero when no watch did,
// as for a resync) to the record.
func (m *Metrics) ObserveDetection(ks *kustomizev1.Kustomization, seen, now time.Time) {
	if m == nil || ks == nil {
		return
	}
	m.Detections.WithLabelValues(ks.Namespace, ks.Name, m.team(ks)).Inc()
	if !seen.IsZero() {
		m.Latency.WithLabelValues(ks.Namespace).Observe(now.Sub(seen).Seconds())
	}
}

// ObserveHotfix counts an object newly marked as a manual hotfix, in the
// namespace of its record.
func (m *Metrics) ObserveHotfix(namespace string, ks *kustomizev1.Kustomization) {
	if m != nil {
		m.Hotfixes.WithLabelValues(namespace, m.team(ks)).Inc()
	}
}

// ObserveDryRun counts a dry run made by the live path or a resync.
func (m *Metrics) ObserveDryRun(resync bool) {
	if m == nil {
		return
	}
	path := "live"
	if resync {
		path = "resync"
	}
	m.DryRuns.WithLabelValues(path).Inc()
}

// SetParked sets how many live changes of ks wait for a current render.
func (m *Metrics) SetParked(ks types.NamespacedName, n int) {
	if m != nil {
		m.Parked.WithLabelValues(ks.Namespace, ks.Name).Set(float64(n))
	}
}

// ObserveWriteBack counts a write-back outcome (when result is set) and
// times a run (when took is).
func (m *Metrics) ObserveWriteBack(result string, took time.Duration) {
	if m == nil {
		return
	}
	if result != "" {
		m.WriteBacks.WithLabelValues(result).Inc()
	}
	if took > 0 {
		m.WriteBackDuration.Observe(took.Seconds())
	}
}

// SetPending sets how many of ks's branches await review.
func (m *Metrics) SetPending(ks types.NamespacedName, n int) {
	if m != nil {
		m.PendingBranches.WithLabelValues(ks.Namespace, ks.Name).Set(float64(n))
	}
}

// SetPullRequests counts the pull requests a branch check saw, by state.
func (m *Metrics) SetPullRequests(ks types.NamespacedName, bc reverse.BranchCheck) {
	if m == nil {
		return
	}
	n := map[string]int{"open": 0, "merged": 0, "closed": 0}
	for _, list := range [][]reverse.BranchResult{bc.Pending, bc.PullRequests} {
		for _, b := range list {
			if b.PullRequestState != "" {
				n[b.PullRequestState]++
			}
		}
	}
	for state, c := range n {
		m.PullRequests.WithLabelValues(ks.Namespace, ks.Name, state).Set(float64(c))
	}
}

// Forget drops a Kustomization's series.
func (m *Metrics) Forget(ks types.NamespacedName) {
	if m == nil {
		return
	}
	match := prometheus.Labels{"namespace": ks.Namespace, "kustomization": ks.Name}
	for _, v := range []*prometheus.GaugeVec{m.Fields, m.FirstSeen, m.Held, m.Parked, m.BuildsPerRevision, m.PendingBranches, m.PullRequests, m.HoldExpired} {
		v.DeletePartialMatch(match)
	}
	m.RenderBuilds.DeletePartialMatch(match)
}

// Report replaces a Kustomization's drift gauges with its open records'
// counts. The old series go whatever their team, so relabelling a
// Kustomization's team moves its gauges rather than duplicating them.
func (m *Metrics) Report(ks *kustomizev1.Kustomization, open []refluxv1.Drift) {
	if m == nil {
		return
	}
	team := m.team(ks)
	match := prometheus.Labels{"namespace": ks.Namespace, "kustomization": ks.Name}
	m.Fields.DeletePartialMatch(match)
	m.FirstSeen.DeletePartialMatch(match)
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
		m.Fields.WithLabelValues(ks.Namespace, ks.Name, team, g.kind, g.severity, g.action).Set(float64(n))
		m.FirstSeen.WithLabelValues(ks.Namespace, ks.Name, team, g.kind, g.severity, g.action).Set(float64(first[g].Unix()))
	}
	m.Held.DeletePartialMatch(match)
	m.Held.WithLabelValues(ks.Namespace, ks.Name, team).Set(float64(held))
}
