package livepath

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// firstStatusGate holds back reflux's first status write of a Drift
// record in one namespace until opened: the window between a record's
// create and its first status write, widened.
type firstStatusGate struct {
	ns     string
	opened chan struct{}
	mu     sync.Mutex
	used   bool
	held   chan struct{}
}

func newFirstStatusGate(ns string) *firstStatusGate {
	return &firstStatusGate{ns: ns, opened: make(chan struct{}), held: make(chan struct{})}
}

func (s *firstStatusGate) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/namespaces/"+s.ns+"/drifts/") &&
			strings.HasSuffix(req.URL.Path, "/status") {
			s.mu.Lock()
			first := !s.used
			s.used = true
			s.mu.Unlock()
			if first {
				close(s.held)
				select {
				case <-s.opened:
				case <-req.Context().Done():
				}
			}
		}
		return rt.RoundTrip(req)
	})
}

// TestADismissalBeforeTheFirstStatusWriteStays: a reviewer dismisses a
// record between its create and reflux's first write of its status. That
// write conflicts, and reflux dismisses the record on its retry, before
// any status said what the drift was. The record stays dismissed, the
// hold goes and Flux restores Git. Before, the next look at the object,
// still drifted, found no fingerprint to match on the closed record,
// took the drift for a new one and reopened the record, which dropped
// the dismissal and held the object again for good (the cause, most
// likely, of TestDismissedMergeRecordIsNeverProposed's failures in CI).
func TestADismissalBeforeTheFirstStatusWriteStays(t *testing.T) {
	g := NewWithT(t)
	const ns = "dismiss-early"
	gate := newFirstStatusGate(ns)
	t.Cleanup(func() {
		select {
		case <-gate.opened:
		default:
			close(gate.opened)
		}
	})
	fixture.StartReflux(t, env, fixture.Options{Name: "reflux-" + ns, Selector: shardKey + "=" + ns, Requests: gate.wrap})
	f := fixture.NewApp(t, env, ns, fixture.AppOptions{ReportOnly: true, Files: flags("search-flags"),
		Labels: map[string]string{shardKey: ns}})

	f.AddKey(g, alice.Client, "search-flags", "HOTFIX", "true")
	g.Eventually(gate.held, timeout, interval).Should(BeClosed(), "the record's first status write waits")
	rec := f.WaitRecord(g, "ConfigMap", "search-flags", func(*refluxv1.Drift) error { return nil })
	g.Expect(rec.Status.State).To(BeEmpty(), "no status written yet")
	fixture.Dismiss(g, env.Client, rec)
	close(gate.opened)

	f.WaitRecord(g, "ConfigMap", "search-flags", fixture.InState(refluxv1.DriftDismissed))
	f.Reconcile(g, ns)
	g.Eventually(func() map[string]string { return f.ConfigMap(g, "search-flags").Data }, timeout, interval).
		ShouldNot(HaveKey("HOTFIX"), "released, and Flux restored Git")
	recs := f.Records(g, "ConfigMap", "search-flags")
	g.Expect(recs).To(HaveLen(1))
	g.Expect(recs[0].Status.State).To(Equal(refluxv1.DriftDismissed), "never reopened")
	g.Expect(recs[0].Annotations).To(HaveKeyWithValue(refluxv1.DismissAnnotation, "true"))
}
