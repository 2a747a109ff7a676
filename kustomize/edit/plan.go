package edit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

// planner plans one change of a set: the object it edits, on the set's
// draft.
type planner struct {
	*draft
	ref    origin.ObjectRef
	fields []origin.Field
}

// Plan computes the minimal source change that makes the rendered field
// ch.Pointer of ch.Object hold ch.Value, and verifies it by rendering the
// changed tree. The tree under opts.Build.Root is not written: apply the
// Result with Write. Plan is PlanSet of one change with no before render,
// so it builds twice (three times in the fallback PlanSet describes); a
// caller with several fields, or with a render at hand, calls PlanSet. A
// change the render already holds is a *VerifyError: nothing would move.
func Plan(ctx context.Context, opts Options, ch Change) (*Result, error) {
	res, err := planSetThen(ctx, opts, nil, []Change{ch}, onlyPlanned)
	if err != nil {
		return nil, err
	}
	return &res.Result, nil
}

// onlyPlanned fails a one-change set whose change was not planned, with
// the change's own error.
func onlyPlanned(res *SetResult) error {
	if len(res.Refused) > 0 {
		return res.Refused[0].Err
	}
	if len(res.Unchanged) > 0 {
		return &VerifyError{} // nothing would move
	}
	return nil
}

func (p *planner) plan(ch Change) (string, error) {
	if ch.Remove {
		return p.remove(ch)
	}
	old, exists := p.field(ch.Pointer)
	if !exists {
		switch {
		case isDataKey(p.ref, ch.Pointer):
			return p.addKey(ch)
		case addsNested(p.ref, ch.Pointer):
			return p.addNested(ch)
		}
		return "", fmt.Errorf("%w: %s %s", origin.ErrFieldNotFound, p.ref, ch.Pointer)
	}
	o, err := p.idx.Lookup(p.ref, ch.Pointer)
	if err != nil {
		return "", err
	}
	if ch.Within != "" {
		return p.setWithin(o, ch)
	}
	if o.Kind == origin.KindNameAffix {
		return "", fmt.Errorf("%w: %s is produced by a name affix", ErrUnsupported, ch.Pointer)
	}
	if p.shared(o) && !p.opts.AllowSharedFiles {
		if ok, err := p.overlayEntry(ch, old.Value); ok || err != nil {
			return ScopeOverlayEntry, err
		}
		return ScopeOverlayPatch, p.overlayPatch(ch)
	}
	return ScopeOrigin, p.setAt(o, old.Value, ch)
}

// readAt reads o's file as changed so far, with where o is in it now.
func (p *planner) readAt(o origin.Origin) (data []byte, line, col int, err error) {
	if data, err = p.read(o.File); err != nil {
		return nil, 0, 0, err
	}
	line, col, err = p.locate(o.File, o.Line, o.Column)
	return data, line, col, err
}

func (p *planner) field(ptr string) (origin.Field, bool) {
	for _, f := range p.fields {
		if f.Pointer == ptr {
			return f, true
		}
	}
	return origin.Field{}, false
}

func isDataKey(ref origin.ObjectRef, ptr string) bool {
	return (ref.Kind == "ConfigMap" || ref.Kind == "Secret") && strings.HasPrefix(ptr, "/data/") &&
		strings.Count(ptr, "/") == 2
}

// Write applies a verified plan to the tree at root.
func (r *Result) Write(root string) error {
	for rel, data := range r.Files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", rel, err)
		}
	}
	return nil
}

// rendered returns the object being edited as rendered before the change.
func (p *planner) rendered() *unstructured.Unstructured {
	for _, u := range p.res.Objects {
		if origin.RefOf(u) == p.ref {
			return u
		}
	}
	return nil
}
