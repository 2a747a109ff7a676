package livepath

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestShardsGovernOnlyTheirOwn runs two reflux shards the way Flux shards
// its controllers: each with --watch-label-selector on
// sharding.fluxcd.io/key, beside the suite's reflux that takes what no
// shard selects. Each governs only its own Kustomization: no other reflux
// writes its records, holds its objects or touches its namespace.
func TestShardsGovernOnlyTheirOwn(t *testing.T) {
	g := NewWithT(t)
	writes := map[string]*writeLog{"a": {}, "b": {}}
	for _, shard := range []string{"a", "b"} {
		fixture.StartReflux(t, env, refluxOptions("reflux-shard-"+shard, shardKey+"="+shard, writes[shard]))
	}
	shard := func(name string) *fixture.App {
		return fixture.NewApp(t, env, "shard-"+name, fixture.AppOptions{Files: flags("flags"), ReportOnly: true,
			Labels: map[string]string{shardKey: name}})
	}
	a, b := shard("a"), shard("b")

	a.AddKey(g, alice.Client, "flags", "FEATURE_DARK_MODE", "true")
	b.AddKey(g, alice.Client, "flags", "FEATURE_DARK_MODE", "true")
	recA := a.WaitRecord(g, "ConfigMap", "flags", fixture.InState(refluxv1.DriftHeld))
	recB := b.WaitRecord(g, "ConfigMap", "flags", fixture.InState(refluxv1.DriftHeld))
	g.Expect(fixture.Held(a.ConfigMap(g, "flags"))).To(BeTrue())
	g.Expect(fixture.Held(b.ConfigMap(g, "flags"))).To(BeTrue())

	// Dismissing a record is carried out by its own shard only.
	// As `kubectl annotate` does: the record's other annotations (its
	// seal among them) stay.
	recA.Annotations[refluxv1.DismissAnnotation] = "true"
	g.Expect(env.Client.Update(t.Context(), recA)).To(Succeed())
	a.WaitRecord(g, "ConfigMap", "flags", fixture.InState(refluxv1.DriftDismissed))

	for shard, own := range map[string]string{"a": "shard-a", "b": "shard-b"} {
		other := map[string]string{"a": "shard-b", "b": "shard-a"}[shard]
		g.Expect(writes[shard].in(other)).To(BeEmpty(), "shard %s must not write in %s", shard, other)
		mine := writes[shard].in(own)
		g.Expect(mine).To(ContainElement(ContainSubstring("/drifts")), "shard %s records its own drift", shard)
		g.Expect(count(mine, "POST", "/drifts")).To(Equal(1), "shard %s creates its record once", shard)
		g.Expect(count(mine, "PATCH", "/configmaps/flags")).To(BeNumerically(">=", 1), "shard %s holds its own object", shard)
	}
	g.Expect(mainWrites.in("shard-a")).To(BeEmpty(), "the unsharded reflux leaves shard a alone")
	g.Expect(mainWrites.in("shard-b")).To(BeEmpty(), "the unsharded reflux leaves shard b alone")
	g.Expect(recB.Name).NotTo(BeEmpty())
}

func count(writes []string, method, path string) int {
	n := 0
	for _, w := range writes {
		if strings.HasPrefix(w, method+" ") && strings.Contains(w, path) {
			n++
		}
	}
	return n
}
