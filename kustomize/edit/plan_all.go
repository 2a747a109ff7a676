package edit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
)

// PlanAll plans several changes as one edit, such as every drifted field
// of one object. Each change is planned and verified on a scratch copy
// that already holds the previous ones, then the combined render is
// checked to move exactly the requested fields. Scope is the widest scope
// any change needed.
func PlanAll(ctx context.Context, opts Options, changes []Change) (*Result, error) {
	root, err := filepath.Abs(opts.Build.Root)
	if err != nil {
		return nil, err
	}
	before, err := kustomize.Build(ctx, opts.Build)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "reflux-plan-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if err := kustomize.CopyTree(root, work); err != nil {
		return nil, err
	}
	step := opts
	step.Build = rebase(opts.Build, root, work)
	all := &Result{Files: map[string][]byte{}, Scope: ScopeOrigin}
	for i, ch := range changes {
		res, err := Plan(ctx, step, ch)
		if err != nil {
			return nil, fmt.Errorf("change %d (%s %s): %w", i, ch.Object, ch.Pointer, err)
		}
		if err := res.Write(work); err != nil {
			return nil, err
		}
		for f, data := range res.Files {
			all.Files[f] = data
		}
		all.Scope = widest(all.Scope, res.Scope)
		if err := reloadKustomization(&step.Build, work, res.Files); err != nil {
			return nil, err
		}
	}
	after, err := kustomize.Build(ctx, step.Build)
	if err != nil {
		return nil, fmt.Errorf("edits break the build: %w", err)
	}
	if err := expectExactly(Diff(before.Objects, after.Objects), changes); err != nil {
		return nil, err
	}
	return all, nil
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

// expectExactly accepts the diff only when it is the requested changes.
func expectExactly(diffs []FieldDiff, changes []Change) error {
	want := map[string]Change{}
	for _, ch := range changes {
		want[objectKey(ch.Object.Kind, ch.Object.Namespace, unhash(ch.Object.Kind, ch.Object.Name))+" "+ch.Pointer] = ch
	}
	if len(diffs) != len(want) {
		return &VerifyError{Moved: diffs}
	}
	for _, d := range diffs {
		ch, ok := want[d.Object+" "+d.Pointer]
		if !ok || !jsonptr.Equal(d.After, ch.Value) {
			return &VerifyError{Moved: diffs}
		}
	}
	return nil
}
