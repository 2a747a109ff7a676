package monitoring

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	ns      = "checkout"
	team    = "payments"
	timeout = 3 * time.Minute
	poll    = 500 * time.Millisecond
)

// TestKitNamesOnlyWhatRefluxExports runs the real reflux binary with
// --team-label=team, drives a drift that writes a branch and a manual
// hotfix through it, and holds every expression of the dashboard and the
// rules against what its /metrics then exports. On the way it checks the
// hotfix is counted once: not again on resync, nor after a restart.
func TestKitNamesOnlyWhatRefluxExports(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := fixture.Shared(t)
	fixture.NewApp(t, e, ns, fixture.AppOptions{Dir: "testdata/app", Labels: map[string]string{"team": team},
		// Short intervals drive reflux's resync.
		SourceInterval: 2 * time.Second, Interval: 3 * time.Second, Signed: true, Unwatched: true})
	r := startReflux(t, e)
	// Edit once reflux governs the Kustomization and watches its objects,
	// so the edits come through the live watch and are timed.
	g.Eventually(func(g Gomega) {
		m, err := r.Metrics(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(value(m, "reflux_held_objects", map[string]string{"namespace": ns, "team": team})).To(Equal(0.0))
	}, timeout, poll).Should(Succeed(), "reflux reports the Kustomization, with its team")

	editLive(t, e, "checkout-flags", nil, "EXPRESS_SHIPPING", "true") // an Alert: a branch that needs a decision
	editLive(t, e, "checkout-limits", map[string]string{refluxv1.DefaultManualHotfixKey: refluxv1.DefaultManualHotfixValue},
		"REQUESTS_PER_SECOND", "800")

	var m testenv.Metrics
	g.Eventually(func(g Gomega) {
		var err error
		m, err = r.Metrics(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(value(m, "reflux_manual_hotfixes_total", map[string]string{"namespace": ns, "team": team})).To(Equal(1.0))
		g.Expect(value(m, "reflux_held_objects", map[string]string{"namespace": ns, "team": team})).To(Equal(2.0))
		g.Expect(value(m, "reflux_drift_fields", map[string]string{"namespace": ns, "kustomization": "checkout", "team": team, "kind": "ConfigMap"})).To(BeNumerically(">=", 1))
		g.Expect(value(m, "reflux_writeback_total", map[string]string{"result": refluxv1.BranchPushedReason})).To(BeNumerically(">=", 1))
		g.Expect(value(m, "reflux_pending_branches", map[string]string{"namespace": ns})).To(BeNumerically(">=", 1))
		timed, _ := m.Sum("reflux_drift_detection_latency_seconds")
		g.Expect(timed).To(BeNumerically(">=", 2), "both live edits were timed")
	}, timeout, poll).Should(Succeed(), "reflux exports the drift, the hotfix and the write-back")

	ex := exportedBy(m)
	exprs := kitExpressions(t)
	g.Expect(len(exprs)).To(BeNumerically(">", 20), "the dashboard's panels and variables, and the three alerts")
	for _, x := range exprs {
		problems, err := unexportedReferences(x.expr, ex)
		g.Expect(err).NotTo(HaveOccurred(), "%s: %s", x.where, x.expr)
		g.Expect(problems).To(BeEmpty(), "%s: %s", x.where, x.expr)
	}

	// Resyncs evaluate the hotfixed object again (a 3s interval): the
	// record is already marked, so the use is not counted again.
	resyncs := dryRuns(m, "resync")
	g.Eventually(func(g Gomega) {
		m, err := r.Metrics(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(dryRuns(m, "resync")).To(BeNumerically(">=", resyncs+2))
		g.Expect(value(m, "reflux_manual_hotfixes_total", map[string]string{"namespace": ns, "team": team})).To(Equal(1.0))
	}, timeout, poll).Should(Succeed())

	// A restart re-evaluates everything against records already marked.
	g.Expect(r.Stop()).To(Succeed())
	r = startReflux(t, e)
	g.Eventually(func(g Gomega) {
		m, err := r.Metrics(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(value(m, "reflux_held_objects", map[string]string{"namespace": ns, "team": team})).To(Equal(2.0))
		g.Expect(dryRuns(m, "resync")).To(BeNumerically(">=", 2), "the restarted reflux evaluated the drifted objects")
		_, counted := m["reflux_manual_hotfixes_total"]
		g.Expect(counted).To(BeFalse(), "no hotfix is new to a restarted reflux")
	}, timeout, poll).Should(Succeed())
}

// kitExpressions are the dashboard's and the rules' expressions.
func kitExpressions(t *testing.T) []expression {
	t.Helper()
	dash, err := dashboardExpressions(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	rules, _, err := ruleExpressions(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	return append(dash, rules...)
}

// exportedBy lists the series names of a scrape with their label names.
func exportedBy(m testenv.Metrics) exported {
	ex := exported{}
	add := func(name string, labels []string, extra ...string) {
		ex[name] = append(slices.Clone(labels), extra...)
	}
	for name, f := range m {
		var labels []string
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			add(name+"_bucket", labels, "le")
			add(name+"_sum", labels)
			add(name+"_count", labels)
		case dto.MetricType_SUMMARY:
			add(name, labels, "quantile")
			add(name+"_sum", labels)
			add(name+"_count", labels)
		default:
			add(name, labels)
		}
	}
	return ex
}

// value is the value of the one series of family name with the labels
// want (and any others), or -1 when there is none.
func value(m testenv.Metrics, name string, want map[string]string) float64 {
	if v, ok := fixture.Value(m, name, want); ok {
		return v
	}
	return -1
}

func dryRuns(m testenv.Metrics, path string) float64 {
	return max(value(m, "reflux_dry_runs_total", map[string]string{"path": path}), 0)
}

// startReflux runs the real binary with the team label, as a platform team
// would, and stops it when the test ends.
func startReflux(t *testing.T, e *testenv.Env) *testenv.RefluxProcess {
	return fixture.StartReflux(t, e, fixture.Options{Args: []string{
		"--team-label=team", "--git-cache-dir=" + filepath.Join(e.Dir, "reflux-git"),
	}})
}

// editLive sets key to value in a live ConfigMap as `kubectl edit` does,
// adding annotations first.
func editLive(t *testing.T, e *testenv.Env, name string, annotations map[string]string, key, value string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	fixture.KubectlEdit(NewWithT(t), e.Client, cm, func() {
		for k, v := range annotations {
			metav1.SetMetaDataAnnotation(&cm.ObjectMeta, k, v)
		}
		cm.Data[key] = value
	})
}
