package sidebyside

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize"
)

// TestCaseNames pins the sub-benchmark names scripts key on.
func TestCaseNames(t *testing.T) {
	var names []string
	for _, c := range cases {
		names = append(names, c.name())
	}
	NewWithT(t).Expect(names).To(Equal([]string{
		"objects=1000/kustomizations=10", "objects=5000/kustomizations=10", "objects=10000/kustomizations=20",
	}))
}

// TestTreeBuilds renders each case's first Kustomization as Flux would:
// its share of the objects, each ConfigMap with git's VALUE.
func TestTreeBuilds(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			g.Expect(writeTree(root, c)).To(Succeed())
			res, err := kustomize.Build(context.Background(), kustomize.BuildOptions{Root: root, Path: ksName(0)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Objects).To(HaveLen(c.perKs()))
			g.Expect(res.Objects[0].Object["data"]).To(HaveKeyWithValue("VALUE", gitValue(0)))
		})
	}
}

// TestTargetsAreDisjoint checks every edit of a case lands on its own
// ConfigMap of the tree, so each is a new drift, and that the burst spreads
// evenly over the Kustomizations.
func TestTargetsAreDisjoint(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			g := NewWithT(t)
			seen := map[target]bool{}
			perKs := map[int]int{}
			var all []target
			if c.latency {
				all = append(append(all, fluxTargets(c)...), refluxTargets(c)...)
			}
			if c.burst {
				for _, tg := range burstTargets(c) {
					perKs[tg.k]++
				}
				all = append(all, burstTargets(c)...)
			}
			for _, tg := range all {
				g.Expect(seen[tg]).To(BeFalse(), "edited twice: %s", tg)
				seen[tg] = true
				g.Expect(tg.i).To(BeNumerically("<", c.perKs()), tg.String())
				g.Expect(tg.k).To(BeNumerically("<", c.kustomizations), tg.String())
			}
			if c.burst {
				g.Expect(perKs).To(HaveLen(c.kustomizations))
				for _, n := range perKs {
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
