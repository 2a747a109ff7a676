package journey

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestATakeoverLeavesWhatItsRecordsSawToTheResync (issue 22 §1): the
// reflux that takes over lists the objects its predecessor held. Those
// whose record has seen their latest write cost its live lane nothing:
// no dry run, no wait for its render; its resync checks them, paced.
// Before, each was a live dry run, and after a failover in the soak,
// thousands of them kept the live queue 90 s behind the edits that came
// in meanwhile. An edit made after the takeover is evaluated as ever.
func TestATakeoverLeavesWhatItsRecordsSawToTheResync(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	const name = "takeover-holds"
	opts := fixture.Options{Name: "reflux-" + name, Selector: shardKey + "=" + name}
	r := fixture.StartReflux(t, env, opts)
	f := fixture.NewApp(t, env, name, fixture.AppOptions{Labels: map[string]string{shardKey: name},
		Files: flagFiles("cart-flags", "search-flags", "probe-flags")})
	held := []string{"cart-flags", "search-flags"}
	records := map[string]string{}
	for _, cm := range held {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.Name, Name: cm}}
		fixture.HeldEdit(g, env, alice.Client, "kubectl-edit", f.Kustomization(), obj, func() { obj.Data["HOTFIX"] = "on" })
		rec := f.WaitRecord(g, "ConfigMap", cm, fixture.All(fixture.HasField("/data/HOTFIX"), notPending))
		records[cm] = rec.Name
	}
	g.Expect(r.Stop()).To(Succeed())

	next := opts
	next.Name = opts.Name + "-2"
	r2 := fixture.StartReflux(t, env, next)
	for _, cm := range held {
		g.Eventually(func() (string, error) { return decisions(r2, records[cm]) }, fixture.Timeout, fixture.Interval).
			Should(ContainSubstring(`"why": "held under a record that has seen its latest write"`), "%s is left to the resync", cm)
	}
	liveDryRuns := func() float64 {
		v, _ := fixture.Metric(g, r2.Process, "reflux_dry_runs_total", map[string]string{"path": "live"})
		return v
	}
	g.Expect(liveDryRuns()).To(BeZero(), "the live lane made no dry run for what the records saw")

	// A write after the takeover is one no record has seen.
	f.AddKey(g, alice.Client, "search-flags", "FUZZY", "on")
	rec := f.WaitRecord(g, "ConfigMap", "search-flags", fixture.All(fixture.HasField("/data/FUZZY"), notPending))
	g.Expect(rec.Spec.Fields).To(ContainElement(HaveField("Pointer", "/data/HOTFIX")), "nothing recorded before is lost")
	g.Expect(liveDryRuns()).To(BeNumerically(">=", 1), "the later edit was evaluated on the live lane")
	g.Expect(f.Records(g, "ConfigMap", "search-flags")).To(HaveLen(1))
	g.Expect(f.Records(g, "ConfigMap", "cart-flags")).To(HaveLen(1))
	g.Expect(f.Records(g, "ConfigMap", "cart-flags")[0].Status.State).NotTo(Equal(refluxv1.DriftResolved))
	for _, cm := range held {
		g.Expect(fixture.Held(f.Get(g, cm, &corev1.ConfigMap{}))).To(BeTrue(), "%s stays held", cm)
	}
}

// decisions are the decisions r logged for the record named rec, one a
// line.
func decisions(r *testenv.RefluxProcess, rec string) (string, error) {
	log, err := r.Log()
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for l := range strings.Lines(string(log)) {
		if strings.Contains(l, "\tdecided\t") && strings.Contains(l, `"record": "`+rec+`"`) {
			out.WriteString(l)
		}
	}
	return out.String(), nil
}
