package desired

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reflux-dev/reflux/kustomize"
)

// ErrRenderBudget is wrapped by the failure of a build that ran past
// RendererOptions.BuildTimeout (issue 22 §2). The Drifted condition
// reports it as RenderFailed, with the budget, until RetryAfter.
var ErrRenderBudget = errors.New("render time budget exceeded")

// buildWithin runs one build under the time budget. krusty takes no
// context and cannot be stopped, so a build past its budget is abandoned:
// the render fails at once, its worker goes back to the pool, and the
// goroutine left in krusty runs until krusty returns, then removes its
// temp dir (kustomize.Build's own cleanup) and drops the result; its
// context is cancelled, so nothing after krusty (substitution, the index)
// runs for it.
//
// Builds take turns, and an abandoned build keeps its turn until krusty
// returns, so at most one is ever abandoned at a time. Taking turns costs
// nothing: Flux's kustomize package already runs one krusty build per
// process at a time (a package mutex, kustomize issue 3659), and a build
// waiting on that mutex could neither be cancelled nor told from a slow
// one. Here the wait is cancellable, and a build's budget starts when it
// gets its turn, so a good tree queued behind an abandoned one is never
// failed for the wait. The size budgets (kustomize.BuildOptions) keep
// what an abandoned build can still cost finite.
func (r *Renderer) buildWithin(ctx context.Context, opts kustomize.BuildOptions) (*kustomize.Result, error) {
	select {
	case r.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	type outcome struct {
		res *kustomize.Result
		err error
	}
	done := make(chan outcome, 1)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer func() { <-r.turn }()
		res, err := r.buildTree(bctx, opts)
		done <- outcome{res, err}
	}()
	timer := time.NewTimer(r.opts.BuildTimeout)
	defer timer.Stop()
	select {
	case o := <-done:
		return o.res, o.err
	case <-timer.C:
		return nil, fmt.Errorf("%w: kustomize build ran past %s and was abandoned; "+
			"no other build runs until it returns (--render-timeout)", ErrRenderBudget, r.opts.BuildTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
