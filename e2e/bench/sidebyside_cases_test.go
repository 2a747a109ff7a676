package bench

import (
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// sideCase is one tree of BenchmarkSideBySide, reconciled by
// kustomize-controller every fluxInterval.
type sideCase struct {
	tree
	fluxInterval time.Duration
	// latency runs the detection-latency edits; burst the 1,000-edit burst.
	latency, burst bool
}

// sideCases run in this order, one environment each. ConfigMaps only, 500
// per Kustomization at most: krusty's build time grows with the square of
// a file's documents, and what is measured here is the watch, not the
// build. The 10,000-object case is for reflux's memory and processor time
// only: at a 1m interval kustomize-controller would re-apply 10,000
// objects a minute and take both cores from what is measured, so it
// reconciles every 10m there.
var sideCases = []sideCase{
	{tree: tree{prefix: "side", objects: 1000, kustomizations: 10}, fluxInterval: time.Minute, latency: true},
	{tree: tree{prefix: "side", objects: 5000, kustomizations: 10}, fluxInterval: time.Minute, burst: true},
	{tree: tree{prefix: "side", objects: 10000, kustomizations: 20}, fluxInterval: 10 * time.Minute},
}

// The edits of each kind touch disjoint ConfigMaps, so that every edit is
// a new drift: kustomize-controller's revert edits take the first few of
// each Kustomization, reflux's latency edits the next, the burst the rest.
const (
	fluxEdits    = 5
	refluxEdits  = 20
	burstEdits   = 1000
	burstFirstCM = 100
)

// spread is n ConfigMaps from the first-th on, round-robin over the
// Kustomizations.
func (c sideCase) spread(n, first int) []target {
	out := make([]target, 0, n)
	for e := range n {
		out = append(out, c.configMap(e%c.kustomizations, first+e/c.kustomizations))
	}
	return out
}

// fluxTargets are the ConfigMaps of kustomize-controller's revert edits,
// one per Kustomization so that each waits on a reconcile of its own.
func (c sideCase) fluxTargets() []target { return c.spread(fluxEdits, 0) }

// refluxTargets are the ConfigMaps of reflux's latency edits.
func (c sideCase) refluxTargets() []target { return c.spread(refluxEdits, 10) }

// burstTargets are the burst's ConfigMaps, spread evenly over every
// Kustomization.
func (c sideCase) burstTargets() []target { return c.spread(burstEdits, burstFirstCM) }

// TestTargetsAreDisjoint checks every edit of a case lands on its own
// ConfigMap of the tree, so each is a new drift, and that the burst spreads
// evenly over the Kustomizations.
func TestTargetsAreDisjoint(t *testing.T) {
	for _, c := range sideCases {
		t.Run(c.name(), func(t *testing.T) {
			g := NewWithT(t)
			seen := map[target]bool{}
			perNS := map[string]int{}
			var all []target
			if c.latency {
				all = append(append(all, c.fluxTargets()...), c.refluxTargets()...)
			}
			if c.burst {
				for _, tg := range c.burstTargets() {
					perNS[tg.Namespace]++
				}
				all = append(all, c.burstTargets()...)
			}
			for _, tg := range all {
				g.Expect(seen[tg]).To(BeFalse(), "edited twice: %s", tg)
				seen[tg] = true
				i, err := configMapIndex(tg.Name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(i).To(BeNumerically("<", c.perKs()), tg.String())
				g.Expect(c.namespaces()).To(ContainElement(tg.Namespace), tg.String())
			}
			if c.burst {
				g.Expect(perNS).To(HaveLen(c.kustomizations))
				for _, n := range perNS {
					g.Expect(n).To(Equal(burstEdits / c.kustomizations))
				}
			}
		})
	}
}

func TestContainsValue(t *testing.T) {
	g := NewWithT(t)
	files := []string{"data:\n  VALUE: \"burst-x-10\"\n", "data:\n  VALUE: burst-x-2\n"}
	g.Expect(containsValue(files, "burst-x-10")).To(BeTrue())
	g.Expect(containsValue(files, "burst-x-2")).To(BeTrue())
	g.Expect(containsValue(files, "burst-x-1")).To(BeFalse())
}

// TestBurstMissing checks the burst's count of lost edits: an edit counts
// as made only when its object is held and an open record carries its
// value.
func TestBurstMissing(t *testing.T) {
	g := NewWithT(t)
	c := sideCases[1]
	targets := c.burstTargets()[:3]
	record := func(tg target, e int, state refluxv1.DriftState) refluxv1.Drift {
		d := refluxv1.Drift{}
		d.Spec.Object = refluxv1.ObjectRef{Kind: tg.Kind, Namespace: tg.Namespace, Name: tg.Name}
		d.Spec.Fields = []refluxv1.DriftField{{Pointer: "/data/VALUE", LiveValue: strconv.Quote(burstValue("r", e))}}
		d.Status.State = state
		return d
	}
	live := func(tg target, held bool) corev1.ConfigMap {
		cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tg.Namespace, Name: tg.Name}}
		if held {
			cm.Annotations = map[string]string{refluxv1.ReconcileAnnotation: refluxv1.ReconcileDisabled, refluxv1.HeldByAnnotation: "r"}
		}
		return cm
	}
	drifts := []refluxv1.Drift{record(targets[0], 0, refluxv1.DriftHeld), record(targets[1], 1, refluxv1.DriftProposed),
		record(targets[2], 2, refluxv1.DriftDismissed)}
	cms := []corev1.ConfigMap{live(targets[0], true), live(targets[1], false), live(targets[2], true)}
	g.Expect(burstMissing(drifts, cms, targets, "r")).To(Equal([]string{targets[1].String(), targets[2].String()}))
	cms[1] = live(targets[1], true)
	g.Expect(burstMissing(drifts, cms, targets, "r")).To(Equal([]string{targets[2].String()}), "a proposed record counts")
	g.Expect(burstMissing(drifts, cms, targets, "other-run")).To(HaveLen(3), "another run's values do not count")
}
