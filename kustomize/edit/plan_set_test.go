package edit

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// counter counts the builds that go through Options.Render.
type counter struct{ n atomic.Int32 }

func (c *counter) render(ctx context.Context, opts kustomize.BuildOptions) (*kustomize.Result, error) {
	c.n.Add(1)
	return kustomize.Build(ctx, opts)
}

func (c *counter) builds() int { return int(c.n.Load()) }

// setSpec is testdata/set-<case>/set.yaml.
type setSpec struct {
	Kustomization string `json:"kustomization"`
	Path          string `json:"path"`
	AllowShared   bool   `json:"allowShared"`
	Changes       []struct {
		Object  origin.ObjectRef `json:"object"`
		Pointer string           `json:"pointer"`
		Value   interface{}      `json:"value"`
	} `json:"changes"`
	Refused   []int `json:"refused"`
	Unchanged []int `json:"unchanged"`
}

func loadSet(t *testing.T, dir string) (setSpec, []Change) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "set.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var spec setSpec
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	var changes []Change
	for _, c := range spec.Changes {
		if f, ok := c.Value.(float64); ok && f == float64(int64(f)) {
			c.Value = int64(f)
		}
		changes = append(changes, Change{Object: c.Object, Pointer: c.Pointer, Value: c.Value})
	}
	return spec, changes
}

// TestPlanSetGoldenTrees plans each testdata/set-<case> against one render
// and checks the tree it writes, which changes it refused or found already
// made, and that it built exactly once.
func TestPlanSetGoldenTrees(t *testing.T) {
	cases, err := filepath.Glob("testdata/*/set.yaml")
	if err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Expect(cases).NotTo(BeEmpty())
	for _, c := range cases {
		dir := filepath.Dir(c)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			g := NewWithT(t)
			spec, changes := loadSet(t, dir)
			work := t.TempDir()
			g.Expect(kustomize.CopyTree(filepath.Join(dir, "original"), work)).To(Succeed())
			builds := &counter{}
			opts := Options{
				Build:            buildOptions(t, caseSpec{Kustomization: spec.Kustomization, Path: spec.Path}, work),
				AllowSharedFiles: spec.AllowShared,
				Render:           builds.render,
			}
			before, err := NewBefore(context.Background(), opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(builds.builds()).To(Equal(1))

			res, err := PlanSet(context.Background(), opts, before, changes)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(builds.builds()).To(Equal(2), "PlanSet builds once")
			g.Expect(refusedIndices(res)).To(Equal(spec.Refused), "refused: %v", res.Refused)
			g.Expect(unchangedIndices(res, changes)).To(Equal(spec.Unchanged))
			g.Expect(res.Planned).To(HaveLen(len(changes) - len(spec.Refused) - len(spec.Unchanged)))

			g.Expect(res.Write(work)).To(Succeed())
			expected := filepath.Join(dir, "expected")
			if *update {
				g.Expect(os.RemoveAll(expected)).To(Succeed())
				g.Expect(kustomize.CopyTree(work, expected)).To(Succeed())
				return
			}
			g.Expect(readTree(t, work)).To(Equal(readTree(t, expected)))
		})
	}
}

func refusedIndices(res *SetResult) []int {
	var out []int
	for _, r := range res.Refused {
		out = append(out, r.Index)
	}
	return out
}

func unchangedIndices(res *SetResult, changes []Change) []int {
	var out []int
	for _, u := range res.Unchanged {
		for i, ch := range changes {
			if ch.Object == u.Object && ch.Pointer == u.Pointer {
				out = append(out, i)
			}
		}
	}
	sort.Ints(out)
	return out
}
