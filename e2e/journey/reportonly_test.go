package journey

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestReportOnlyPolicyNeverTouchesGit (scenario 6): under a report-only
// policy drift is recorded, held and reported by condition, event and
// metric, and the git server receives nothing from reflux.
func TestReportOnlyPolicyNeverTouchesGit(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := fixture.NewApp(t, env, "reportonly", fixture.AppOptions{ReportOnly: true, Files: flagFiles("billing-flags")})
	ks := f.Kustomization()
	// Flux polls hourly here, so every session from now on would be
	// reflux's.
	before := env.Git.Requests(f.Repo)
	f.AddKey(g, alice.Client, "billing-flags", "NET_30", "true")

	rec := f.WaitRecord(g, "ConfigMap", "billing-flags", fixture.InState(refluxv1.DriftHeld))
	_, err := fixture.Field(rec, "/data/NET_30")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Status.Branch).To(BeEmpty())
	g.Expect(fixture.Held(f.Get(g, "billing-flags", &corev1.ConfigMap{}))).To(BeTrue())
	g.Eventually(func() string { return f.Condition(g, ks.Name, refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/" + refluxv1.DriftDetectedReason))
	g.Eventually(func() string { return f.Condition(g, ks.Name, refluxv1.ReverseSyncedCondition) }, fixture.Timeout, fixture.Interval).
		Should(ContainSubstring("/" + refluxv1.ReportOnlyReason))
	f.Event(g, "DriftDetected", "billing-flags")
	g.Eventually(func() float64 {
		v, _ := fixture.Metric(g, suiteReflux.Process, "reflux_drift_fields", map[string]string{"namespace": f.Name, "kind": "ConfigMap"})
		return v
	}, fixture.Timeout, fixture.Interval).Should(BeNumerically("==", 1))

	g.Expect(env.Git.Requests(f.Repo).Sub(before)).To(BeZero(), "no clone, fetch or push reached the git server")
}
