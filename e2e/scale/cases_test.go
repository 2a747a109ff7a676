package scale

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/kustomize"
)

// TestCaseNames pins the sub-benchmark names scripts key on.
func TestCaseNames(t *testing.T) {
	g := NewWithT(t)
	var names []string
	for _, c := range cases {
		names = append(names, c.name())
	}
	g.Expect(names).To(Equal([]string{
		"objects=1000/kustomizations=20", "objects=10000/kustomizations=100", "objects=10000/kustomizations=1",
	}))
}

// TestTreeBuilds renders the first Kustomization of each case as Flux
// would and counts what it applies: its share of the objects, ConfigMaps
// with four keys, a Deployment in fifty. krusty's resource map is
// quadratic in a file's documents (a 10,000-document file takes minutes),
// so the one-Kustomization case is built at a tenth of its size; its file
// is checked by counting documents.
func TestTreeBuilds(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			g := NewWithT(t)
			built := c
			if c.perKs() > 1000 {
				built = scaleCase{objects: c.objects / 10, kustomizations: c.kustomizations}
				doc := resources(c, 0)
				g.Expect(strings.Count(doc, "\nkind: ConfigMap\n")).To(Equal(c.configMapsPerKs()))
				g.Expect(strings.Count(doc, "\nkind: Deployment\n")).To(Equal(c.deploymentsPerKs()))
			}
			root := t.TempDir()
			g.Expect(writeTree(root, built)).To(Succeed())
			entries, err := os.ReadDir(root)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(entries).To(HaveLen(c.kustomizations))

			res, err := kustomize.Build(context.Background(), kustomize.BuildOptions{Root: root, Path: ksName(0)})
			g.Expect(err).NotTo(HaveOccurred())
			deployments := 0
			for _, o := range res.Objects {
				switch o.GetKind() {
				case "ConfigMap":
					data, _, _ := unstructured.NestedStringMap(o.Object, "data")
					g.Expect(data).To(HaveLen(4), o.GetName())
				case "Deployment":
					deployments++
				}
			}
			g.Expect(res.Objects).To(HaveLen(built.perKs()))
			g.Expect(deployments).To(Equal(built.deploymentsPerKs()))
			g.Expect(c.perKs() * c.kustomizations).To(Equal(c.objects))
		})
	}
}

// TestEditTargets checks the edits are distinct objects of the tree,
// spread over every Kustomization when there are enough edits, and reach
// past the head of a long file.
func TestEditTargets(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			g := NewWithT(t)
			targets := editTargets(c)
			g.Expect(len(targets)).To(BeNumerically(">=", 30))
			seen := map[target]bool{}
			perNS := map[string]int{}
			deepest := 0
			for _, tg := range targets {
				g.Expect(seen[tg]).To(BeFalse(), "edited twice: %s", tg)
				seen[tg] = true
				perNS[tg.Namespace]++
				var i int
				_, err := fmt.Sscanf(tg.Name, "settings-%05d", &i)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(i).To(BeNumerically("<", c.configMapsPerKs()))
				deepest = max(deepest, i)
			}
			g.Expect(perNS).To(HaveLen(min(len(targets), c.kustomizations)))
			if c.kustomizations == 1 {
				g.Expect(deepest).To(BeNumerically(">", c.configMapsPerKs()*9/10), "edits reach the end of the file")
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	g := NewWithT(t)
	var samples []time.Duration
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	g.Expect(percentile(samples, 50)).To(Equal(50 * time.Millisecond))
	g.Expect(percentile(samples, 99)).To(Equal(99 * time.Millisecond))
	g.Expect(percentile(samples[:1], 99)).To(Equal(time.Millisecond))
}

func TestFiguresCountLostEdits(t *testing.T) {
	g := NewWithT(t)
	f := figures{edits: []editResult{
		{target: target{"a", "x"}, held: true, recorded: true, hold: time.Millisecond, record: 2 * time.Millisecond},
		{target: target{"a", "y"}, held: true, hold: 3 * time.Millisecond},
		{target: target{"b", "z"}},
	}}
	g.Expect(f.lost()).To(Equal(2))
	g.Expect(f.lostEdits()).To(Equal("a/y (no record); b/z (no hold, no record)"))
	hold, record := f.latencies()
	g.Expect(hold).To(HaveLen(2))
	g.Expect(record).To(HaveLen(1))
	g.Expect(f.String()).To(ContainSubstring("3 edits, 2 lost"))
}
