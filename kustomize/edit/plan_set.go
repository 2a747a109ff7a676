package edit

import (
	"context"
	"errors"
	"fmt"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

// PlanSet plans every change against before, without building, writes the
// plan to a scratch copy of the tree, builds that once and accepts the
// plan only when the render moved exactly the planned fields to their
// values. On a tree of thousands of objects one build takes minutes: this
// is what keeps a write-back attempt at one render to read the current
// values (before) and one to verify, whatever the number of fields.
//
// A change that cannot be planned is reported in Refused and the others
// are planned without it; a change whose field already holds the value is
// reported in Unchanged. When the combined render moves anything else,
// PlanSet returns a *VerifyError naming what moved and what was missed.
//
// Builds, all through opts.Render:
//   - one, when any change is planned (none when none is);
//   - one more first when before is nil, to render it;
//   - one more only when the verification shows that an overlay images
//     or replicas entry reached fields the before render did not show it
//     would (the render decides that fallback up front whenever it can):
//     the set is then planned again with overlay patches naming each
//     object instead of entries, and verified again.
//
// Changes are planned against the before render, not against each other.
// A set that renames a list element's merge key (a container's name) and
// edits that element through an overlay patch addresses the element by
// its old name and fails verification; plan such a rename on its own.
func PlanSet(ctx context.Context, opts Options, before *Before, changes []Change) (*SetResult, error) {
	return planSetThen(ctx, opts, before, changes, nil)
}

// planSetThen is PlanSet with a check of the plan before it is verified,
// so a caller that takes all changes or none skips a verification build
// that could only be wasted.
func planSetThen(ctx context.Context, opts Options, before *Before, changes []Change, check func(*SetResult) error) (*SetResult, error) {
	if before == nil || before.Result == nil || before.Index == nil {
		var err error
		if before, err = NewBefore(ctx, opts); err != nil {
			return nil, err
		}
	}
	out, err := attempt(ctx, opts, before, changes, check, false)
	var ve *VerifyError
	if errors.As(err, &ve) && out != nil && hasScope(out.Planned, ScopeOverlayEntry) {
		// An entry reached more than the index showed.
		out, err = attempt(ctx, opts, before, changes, check, true)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// attempt plans the set and verifies it; on a verification failure it
// returns the plan with the error.
func attempt(ctx context.Context, opts Options, before *Before, changes []Change, check func(*SetResult) error, noEntries bool) (*SetResult, error) {
	out, d, err := planSet(opts, before, changes, noEntries)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(out); err != nil {
			return nil, err
		}
	}
	if len(out.Planned) == 0 {
		return out, nil
	}
	return out, d.verify(ctx, out.Planned)
}

// planSet plans each change in turn on one draft, then writes the pending
// overlay patches.
func planSet(opts Options, before *Before, changes []Change, noEntries bool) (*SetResult, *draft, error) {
	d, err := newDraft(opts, before)
	if err != nil {
		return nil, nil, err
	}
	d.noEntries = noEntries
	out := &SetResult{Result: Result{Scope: ScopeOrigin}}
	set := map[string]int{} // object and pointer -> the change that sets it
	for i, ch := range changes {
		scope, err := d.planOne(before, ch, i, set)
		switch {
		case errors.Is(err, errUnchanged):
			out.Unchanged = append(out.Unchanged, ch)
		case err != nil:
			out.Refused = append(out.Refused, Refusal{Index: i, Change: ch, Err: err})
		default:
			out.Planned = append(out.Planned, Planned{Index: i, Change: ch, Scope: scope})
			out.Scope = widest(out.Scope, scope)
		}
	}
	if err := d.flush(); err != nil {
		return nil, nil, err
	}
	out.Files = d.files
	return out, d, nil
}

// errUnchanged marks a change whose field already holds its value.
var errUnchanged = errors.New("the field already holds the value")

// planOne plans one change on the draft, undoing whatever it wrote when it
// cannot be planned.
func (d *draft) planOne(before *Before, ch Change, i int, set map[string]int) (string, error) {
	ref, err := d.idx.Resolve(ch.Object)
	if err != nil {
		return "", err
	}
	key := fieldKey(ref, ch.Pointer)
	if j, ok := set[key]; ok {
		return "", fmt.Errorf("%w: change %d already sets %s %s", ErrConflict, j, ref, ch.Pointer)
	}
	if v, found, err := before.Value(Change{Object: ref, Pointer: ch.Pointer, Within: ch.Within}); err != nil {
		return "", err
	} else if ch.HeldBy(v, found) {
		return "", errUnchanged
	}
	p := &planner{draft: d, ref: ref}
	if p.fields, err = d.idx.Fields(ref); err != nil {
		return "", err
	}
	undo := d.snapshot()
	scope, err := p.plan(ch)
	if err != nil {
		d.restore(undo)
		return "", err
	}
	set[key] = i
	return scope, nil
}

// fieldKey names a field of a rendered object as Diff does.
func fieldKey(ref origin.ObjectRef, ptr string) string {
	return objectKey(ref.Kind, ref.Namespace, unhash(ref.Kind, ref.Name)) + " " + ptr
}

func hasScope(planned []Planned, scope string) bool {
	for _, p := range planned {
		if p.Scope == scope {
			return true
		}
	}
	return false
}
