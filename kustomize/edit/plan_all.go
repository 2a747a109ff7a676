package edit

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/reflux-dev/reflux/kustomize"
)

// PlanAll plans several changes as one edit, such as every drifted field
// of one object, and verifies them together. Unlike PlanSet it is all or
// nothing: a change that cannot be made, or that the render already
// holds, fails the whole plan. Scope is the widest scope any change
// needed. It builds twice: the before render, then the verification.
func PlanAll(ctx context.Context, opts Options, changes []Change) (*Result, error) {
	res, err := planSetThen(ctx, opts, nil, changes, allPlanned)
	if err != nil {
		return nil, err
	}
	return &res.Result, nil
}

// allPlanned fails a set in which any change was not planned.
func allPlanned(res *SetResult) error {
	if len(res.Refused) > 0 {
		r := res.Refused[0]
		return fmt.Errorf("change %d (%s %s): %w", r.Index, r.Change.Object, r.Change.Pointer, r.Err)
	}
	if len(res.Unchanged) > 0 {
		ch := res.Unchanged[0]
		return fmt.Errorf("change %s %s: %w", ch.Object, ch.Pointer, &VerifyError{})
	}
	return nil
}

// rebase points build options at a copy of the tree.
func rebase(opts kustomize.BuildOptions, root, work string) kustomize.BuildOptions {
	opts.Root = work
	if filepath.IsAbs(opts.KustomizationFile) {
		if rel, err := filepath.Rel(root, opts.KustomizationFile); err == nil {
			opts.KustomizationFile = filepath.Join(work, rel)
		}
	}
	return opts
}

func widest(a, b string) string {
	rank := map[string]int{ScopeOrigin: 0, ScopeOverlayEntry: 1, ScopeOverlayPatch: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}
