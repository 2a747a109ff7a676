package journey

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestReportOnlyPolicyNeverTouchesGit (scenario 6): under a report-only
// policy drift is recorded, held and reported by condition, event and
// metric, and the git server receives nothing from reflux.
func TestReportOnlyPolicyNeverTouchesGit(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := newFixture(t, "reportonly", fixtureOptions{reportOnly: true, files: flagFiles("billing-flags")})
	ks := f.only()
	// Flux polls hourly here, so every session from now on would be
	// reflux's.
	before := env.Git.Requests(f.repo)
	f.addKey(g, "billing-flags", "NET_30", "true")

	rec := f.waitRecord(g, "ConfigMap", "billing-flags", inState(refluxv1.DriftHeld))
	_, err := field(rec, "/data/NET_30")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Status.Branch).To(BeEmpty())
	g.Expect(isHeld(f.get(g, "billing-flags", &corev1.ConfigMap{}))).To(BeTrue())
	g.Eventually(func() string { return f.condition(g, ks.Name, refluxv1.DriftedCondition) }, timeout, interval).
		Should(HavePrefix("True/" + refluxv1.DriftDetectedReason))
	g.Eventually(func() string { return f.condition(g, ks.Name, refluxv1.ReverseSyncedCondition) }, timeout, interval).
		Should(ContainSubstring("/" + refluxv1.ReportOnlyReason))
	f.event(g, "DriftDetected", "billing-flags")
	g.Eventually(func() float64 {
		v, _ := metric(g, suiteReflux, "reflux_drift_fields", map[string]string{"namespace": f.name, "kind": "ConfigMap"})
		return v
	}, timeout, interval).Should(BeNumerically("==", 1))

	g.Expect(env.Git.Requests(f.repo).Sub(before)).To(BeZero(), "no clone, fetch or push reached the git server")
}
