package writeback

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/git/repository"
)

// keep brings a branch a human has committed to in line with the open
// drift without rewriting anyone's commits: one reflux commit goes on top
// of the open head, with the tree the branch would have if reflux had
// only ever written the open drift and the humans' commits had followed.
// That tree is the merge base with the source, plus Apply's edits, plus
// the humans' changes replayed as text patches. reflux's own earlier
// commits are not replayed, which is what takes the edits of closed
// records out of the branch.
func (e *Engine) keep(ctx context.Context, c repository.Client, req Request, open git.Ref, human []git.Commit, src string) (Result, error) {
	res := Result{Branch: open.Name, Commit: open.Hash, Base: src}
	base, err := c.MergeBase(open.Hash, src)
	if err != nil {
		return gitError(res, err)
	}
	if base == "" {
		return gitError(res, fmt.Errorf("%s has no common history with %.12s", open.Name, src))
	}
	res.Base = base
	want, err := e.build(c, req, open.Hash, base, human)
	if err != nil {
		return stop(res, err)
	}
	commit, err := e.commitOnTop(c, req, open.Hash, base, want)
	if errors.Is(err, git.ErrNoChanges) {
		res.Outcome = UpToDate
		res.Reason = fmt.Sprintf("%s already proposes the open drift beside %s", open.Name, keptCommits(human))
		return res, nil
	}
	if err != nil {
		return stop(res, err)
	}
	p := plan{branch: open.Name, source: src, base: base, lease: open.Hash}
	if res, err = e.push(ctx, c, req, p, commit, res); err != nil {
		return res, err
	}
	res.Reason = fmt.Sprintf("added a commit to %s bringing it to the open drift; kept %s", open.Name, keptCommits(human))
	return res, nil
}

// build computes the tree keep commits, as the content of every path
// that may differ from the open head: Apply runs on a checkout of base,
// then the humans' commits are replayed oldest first.
func (e *Engine) build(c repository.Client, req Request, head, base string, human []git.Commit) (map[string]file, error) {
	changed, err := e.applyOn(c, req, base)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(c.Path())
	if err != nil {
		return nil, err
	}
	defer root.Close()
	r := &replayer{c: c, root: root, base: base, touched: map[string]bool{}}
	for _, co := range slices.Backward(human) {
		if err := r.replay(co); err != nil {
			return nil, err
		}
	}
	// A path outside these has the same content at base and at head, and
	// neither Apply nor a human changed it.
	branchPaths, err := c.Diff(base, head)
	if err != nil {
		return nil, err
	}
	paths := append(append(branchPaths, changed...), slices.Collect(maps.Keys(r.touched))...)
	want := map[string]file{}
	for _, p := range paths {
		if _, ok := want[p]; ok {
			continue
		}
		if want[p], err = readFile(root, p); err != nil {
			return nil, err
		}
	}
	return want, nil
}

// commitOnTop writes want over a checkout of head and commits it there,
// so the new commit's only parent is the open head.
func (e *Engine) commitOnTop(c repository.Client, req Request, head, base string, want map[string]file) (string, error) {
	if err := c.Checkout(head); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(c.Path())
	if err != nil {
		return "", err
	}
	defer root.Close()
	paths := slices.Sorted(maps.Keys(want))
	for _, p := range paths {
		if err := writeFile(root, p, want[p]); err != nil {
			return "", err
		}
	}
	return e.commit(c, req, base, paths)
}

// keptCommits says whose work a kept branch carries, e.g.
// "2 commit(s) by Jane Human, Joe Doe".
func keptCommits(human []git.Commit) string {
	var names []string
	for _, co := range slices.Backward(human) {
		if !slices.Contains(names, co.Author.Name) {
			names = append(names, co.Author.Name)
		}
	}
	return fmt.Sprintf("%d commit(s) by %s", len(human), strings.Join(names, ", "))
}
