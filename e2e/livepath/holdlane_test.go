package livepath

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// dryRunGate holds back reflux's dry runs in one namespace while shut:
// the first step of evaluating a live change against a current render.
// The live workers then stall on their first changes, as they do behind
// a backlog, and every other change waits in the queue.
type dryRunGate struct {
	ns      string
	mu      sync.Mutex
	opened  chan struct{}
	waiting int
}

func newDryRunGate(ns string) *dryRunGate {
	g := &dryRunGate{ns: ns, opened: make(chan struct{})}
	close(g.opened)
	return g
}

func (d *dryRunGate) shut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.opened = make(chan struct{})
}

func (d *dryRunGate) open() {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.opened:
	default:
		close(d.opened)
	}
}

// held is how many dry runs wait at the gate.
func (d *dryRunGate) held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waiting
}

func (d *dryRunGate) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPatch && req.URL.Query().Get("dryRun") != "" &&
			strings.Contains(req.URL.Path, "/namespaces/"+d.ns+"/") {
			d.mu.Lock()
			opened := d.opened
			d.waiting++
			d.mu.Unlock()
			select {
			case <-opened:
			case <-req.Context().Done():
			}
			d.mu.Lock()
			d.waiting--
			d.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// TestHoldLaneHoldsWhatTheLiveLaneHasNotReached: while reflux's two live
// workers are stuck on their first changes, a burst of edits waits in
// the queue. The hold lane holds them all the same, before any is
// evaluated or recorded, and Flux's reconcile in that window keeps every
// one of them. Once the live lane catches up, each is recorded and stays
// held as drift. Before the hold lane, those edits waited their turn
// unheld, and Flux reverted them (issue 22's soak, after a failover).
func TestHoldLaneHoldsWhatTheLiveLaneHasNotReached(t *testing.T) {
	g := NewWithT(t)
	const objects, workers = 12, 2
	gate := newDryRunGate("holdlane")
	t.Cleanup(gate.open)
	fixture.StartReflux(t, env, fixture.Options{Name: "reflux-holdlane", Selector: shardKey + "=holdlane", Requests: gate.wrap,
		Args: []string{fmt.Sprintf("--live-workers=%d", workers)}})
	f := fixture.NewApp(t, env, "holdlane", fixture.AppOptions{ReportOnly: true,
		Files: fixture.OneFile("configmaps.yaml", configMaps(objects, "v1")), Labels: map[string]string{shardKey: "holdlane"}})

	gate.shut()
	var names []string
	for i := range objects {
		name := fmt.Sprintf("cm-%05d", i)
		f.AddKey(g, alice.Client, name, "HOTFIX", "true")
		names = append(names, name)
	}
	g.Eventually(gate.held, timeout, interval).Should(Equal(workers), "both live workers wait on a dry run")
	heldNow := func() int {
		n := 0
		for _, name := range names {
			if fixture.Held(f.ConfigMap(g, name)) {
				n++
			}
		}
		return n
	}
	g.Eventually(heldNow, timeout, interval).Should(Equal(objects-workers),
		"every edit the live workers have not reached is held")
	g.Expect(f.Records(g, "ConfigMap", "")).To(BeEmpty(), "held before any is evaluated or recorded")

	// Flux's reconcile comes while the live lane is still stuck.
	f.Reconcile(g, "holdlane")
	kept := 0
	for _, name := range names {
		if f.ConfigMap(g, name).Data["HOTFIX"] == "true" {
			kept++
		}
	}
	g.Expect(kept).To(BeNumerically(">=", objects-workers), "Flux skipped every held object")

	gate.open()
	for _, name := range names {
		cm := f.ConfigMap(g, name)
		if cm.Data["HOTFIX"] != "true" {
			continue // one the live workers had: Flux reverted it unheld
		}
		rec := f.WaitRecord(g, "ConfigMap", name, fixture.InState(refluxv1.DriftHeld))
		g.Expect(rec.Spec.Fields).To(ContainElement(HaveField("Pointer", "/data/HOTFIX")))
		g.Expect(fixture.Held(f.ConfigMap(g, name))).To(BeTrue(), "%s stays held as drift", name)
	}
}
