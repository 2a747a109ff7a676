package governor

import (
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/desired"
)

func governed(mutate func(ks *kustomizev1.Kustomization, g *Governed)) *Governed {
	ks := &kustomizev1.Kustomization{}
	ks.Name, ks.Namespace, ks.Generation = "podinfo", "flux-system", 2
	ks.Status.ObservedGeneration = 2
	ks.Status.LastAppliedRevision = "main@sha1:1"
	ks.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue}}
	g := &Governed{Kustomization: ks, Policy: &refluxv1.ReverseSyncPolicy{}, SourceRevision: "main@sha1:1"}
	if mutate != nil {
		mutate(ks, g)
	}
	return g
}

func TestCurrent(t *testing.T) {
	applied := &desired.Render{Revision: "main@sha1:1", Generation: 2}
	tests := []struct {
		name             string
		g                *Governed
		render           *desired.Render
		rolling, current bool
	}{
		{"applied revision rendered", governed(nil), applied, false, true},
		{"no render yet", governed(nil), nil, false, false},
		{"render of an older revision", governed(nil), &desired.Render{Revision: "main@sha1:0", Generation: 2}, false, false},
		{"render of an older spec", governed(nil), &desired.Render{Revision: "main@sha1:1", Generation: 1}, false, false},
		{"a new spec Flux has not reconciled", governed(func(ks *kustomizev1.Kustomization, _ *Governed) { ks.Status.ObservedGeneration = 1 }), applied, true, false},
		{"the source serves a revision Flux is applying", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			g.SourceRevision = "main@sha1:2"
			ks.Status.Conditions[0].Status = metav1.ConditionUnknown
		}), applied, true, false},
		{"Flux failed the new revision: the applied one stands", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			g.SourceRevision = "main@sha1:2"
			ks.Status.Conditions[0].Status = metav1.ConditionFalse
		}), applied, false, true},
		{"suspended: Flux applies nothing new", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			g.SourceRevision, ks.Spec.Suspend = "main@sha1:2", true
		}), applied, false, true},
		{"source revision unknown", governed(func(_ *kustomizev1.Kustomization, g *Governed) { g.SourceRevision = "" }), applied, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(RollingOut(tt.g)).To(Equal(tt.rolling), "rolling out")
			g.Expect(isCurrent(tt.g, tt.render)).To(Equal(tt.current), "current")
		})
	}
}

func TestChangesCoalesce(t *testing.T) {
	g := NewWithT(t)
	owner := types.NamespacedName{Namespace: "flux-system", Name: "podinfo"}
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	flux := change{owner: owner, seen: t0.Add(time.Second), from: "12", benign: true}
	human := change{owner: owner, seen: t0, from: "10", reverted: true}

	c := flux.merge(human)
	g.Expect(c.seen).To(Equal(t0), "the first sighting counts for latency")
	g.Expect(c.from).To(Equal("10"), "clean-since is from before the first change")
	g.Expect(c.benign).To(BeFalse(), "one human writer makes the batch worth a look")
	g.Expect(c.reverted).To(BeTrue(), "and worth a hold")

	g.Expect(flux.merge(change{})).To(Equal(flux), "nothing earlier: unchanged")
	resync := change{owner: owner}
	g.Expect(resync.merge(flux).seen).To(Equal(flux.seen), "a resync keeps a live change's sighting")
	g.Expect(resync.merge(flux).benign).To(BeFalse(), "a resync always looks")
}

// A resync that records a drift before the live worker gets to it still
// times the live change: queued, in flight or parked, whichever is first.
func TestSightingOfAChangeNotYetEvaluated(t *testing.T) {
	owner := types.NamespacedName{Namespace: "checkout", Name: "checkout"}
	k := objKey{Namespace: "checkout", Name: "checkout-limits"}
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name                      string
		pending, inflight, parked *change
		want                      time.Time
	}{
		{name: "nothing seen: a resync's own finding", want: time.Time{}},
		{name: "queued", pending: &change{owner: owner, seen: t0}, want: t0},
		{name: "taken by a live worker", inflight: &change{owner: owner, seen: t0}, want: t0},
		{name: "parked until the render is current", parked: &change{owner: owner, seen: t0}, want: t0},
		{name: "the earliest of them", pending: &change{owner: owner, seen: t0.Add(2 * time.Second)},
			inflight: &change{owner: owner, seen: t0.Add(time.Second)}, parked: &change{owner: owner, seen: t0}, want: t0},
		{name: "a record's change carries no sighting", pending: &change{owner: owner}, want: time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gv := &Governor{pending: map[objKey]change{}, inflight: map[objKey]change{},
				entries: map[types.NamespacedName]*entry{owner: {parked: map[objKey]change{}}}}
			if tt.pending != nil {
				gv.pending[k] = *tt.pending
			}
			if tt.inflight != nil {
				gv.inflight[k] = *tt.inflight
			}
			if tt.parked != nil {
				gv.entries[owner].parked[k] = *tt.parked
			}
			NewWithT(t).Expect(gv.sighting(owner, k)).To(Equal(tt.want))
		})
	}
}

func TestTakeKeepsTheChangeInFlightUntilDone(t *testing.T) {
	g := NewWithT(t)
	owner := types.NamespacedName{Namespace: "checkout", Name: "checkout"}
	k := objKey{Namespace: "checkout", Name: "checkout-flags"}
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	gv := &Governor{pending: map[objKey]change{k: {owner: owner, seen: t0}}, inflight: map[objKey]change{},
		entries: map[types.NamespacedName]*entry{}}
	c := gv.take(k)
	g.Expect(c.seen).To(Equal(t0))
	g.Expect(gv.sighting(owner, k)).To(Equal(t0), "in flight")
	gv.done(k)
	g.Expect(gv.sighting(owner, k)).To(BeZero(), "evaluated")
}

func TestReleaseCommand(t *testing.T) {
	g := NewWithT(t)
	g.Expect(releaseCommand(refluxv1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "checkout", Name: "api"})).
		To(Equal("kubectl -n checkout annotate deployment.apps/api kustomize.toolkit.fluxcd.io/reconcile- reflux.dev/held-by- reflux.dev/held-since-"))
	g.Expect(releaseCommand(refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "checkout", Name: "flags"})).
		To(Equal("kubectl -n checkout annotate configmap/flags kustomize.toolkit.fluxcd.io/reconcile- reflux.dev/held-by- reflux.dev/held-since-"))
}
