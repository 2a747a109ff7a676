package desired

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/kustomize"
)

// TestRendererAbandonsABuildPastItsBudget: a build that runs past the
// time budget fails the render with ErrRenderBudget, naming the budget,
// while it is still stuck in krusty; the next revision waits for its turn
// without its budget running, and renders fine once the abandoned build
// returns (issue 22 §2).
func TestRendererAbandonsABuildPastItsBudget(t *testing.T) {
	g := NewWithT(t)
	good, _ := artifactServer(t, tarball(t, "testdata/shop"))
	bad := *good
	bad.Revision = "main@sha1:bad"
	d := newDone()
	const budget = time.Second
	renderer := NewRenderer(NewFetcher(1, 10<<20, 10<<20), RendererOptions{Done: d.fn, BuildTimeout: budget, RetryAfter: time.Hour})
	// The first build is stuck as krusty gets stuck: deaf to its context
	// until released. It builds the tree first, and later builds (of the
	// same tree) return that build's result at once: a real build of it
	// may itself take longer than the one-second budget on a loaded
	// machine under -race, and this test is about the budget's
	// bookkeeping, not kustomize's speed.
	stuck, released := make(chan struct{}), make(chan struct{})
	var builds, returned atomic.Int32
	var built *kustomize.Result
	var buildErr error
	renderer.buildTree = func(ctx context.Context, opts kustomize.BuildOptions) (*kustomize.Result, error) {
		defer returned.Add(1)
		if builds.Add(1) == 1 {
			built, buildErr = kustomize.Build(context.Background(), opts)
			close(stuck)
			<-released
			return built, buildErr
		}
		return built, buildErr
	}

	ks := shopKustomization()
	ks.Status.LastAppliedRevision = bad.Revision
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: &bad}).Building).To(BeTrue())
	g.Eventually(stuck, 30*time.Second).Should(BeClosed())
	var st State
	g.Eventually(func() error { st = renderer.Want(Request{Kustomization: ks, Artifact: &bad}); return st.Err }, 30*time.Second).
		Should(MatchError(ErrRenderBudget))
	g.Expect(st.Err.Error()).To(ContainSubstring("kustomize build ran past 1s and was abandoned"))
	g.Expect(st.Building).To(BeFalse(), "the render failed while krusty still runs")
	g.Expect(returned.Load()).To(BeZero())

	// A later good revision waits for the abandoned build's turn, its
	// budget not running meanwhile: it is never failed for the wait.
	ks.Status.LastAppliedRevision = good.Revision
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: good}).Building).To(BeTrue())
	g.Consistently(func() State { return renderer.Want(Request{Kustomization: ks, Artifact: good}) }, 2*budget, budget/10).
		Should(And(HaveField("Err", BeNil()), HaveField("Building", BeTrue()), HaveField("Ready", BeFalse())))
	g.Expect(builds.Load()).To(Equal(int32(1)), "no second krusty build while one is abandoned")

	close(released)
	r := rendered(g, renderer, d, Request{Kustomization: ks, Artifact: good})
	g.Expect(r.Revision).To(Equal(good.Revision))
	g.Expect(r.Objects).To(HaveLen(3))
	g.Eventually(returned.Load).Should(Equal(int32(2)), "the abandoned build returned too")
	g.Eventually(func() int { return len(renderer.turn) }).Should(BeZero(), "and gave back its turn")
	id := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	g.Expect(renderer.Current(id)).To(BeIdenticalTo(r), "the abandoned build's result was dropped")
}
