package edit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// planner holds one Plan call's state: the index of the current render
// and the files changed so far (the tree itself is never written).
type planner struct {
	opts   Options
	root   string
	idx    *origin.Index
	res    *kustomize.Result
	ref    origin.ObjectRef
	fields []origin.Field
	files  map[string][]byte
}

// Plan computes the minimal source change that makes the rendered field
// ch.Pointer of ch.Object hold ch.Value, and verifies it by rendering the
// changed tree. The tree under opts.Build.Root is not written: apply the
// Result with Write.
func Plan(ctx context.Context, opts Options, ch Change) (*Result, error) {
	root, err := filepath.Abs(opts.Build.Root)
	if err != nil {
		return nil, err
	}
	idx, res, err := origin.Build(ctx, opts.Build)
	if err != nil {
		return nil, err
	}
	p := &planner{opts: opts, root: root, idx: idx, res: res, files: map[string][]byte{}}
	if p.ref, err = idx.Resolve(ch.Object); err != nil {
		return nil, err
	}
	if p.fields, err = idx.Fields(p.ref); err != nil {
		return nil, err
	}
	scope, err := p.plan(ch)
	if err != nil {
		return nil, err
	}
	err = verify(ctx, opts.Build, root, res, p.files, p.ref, ch)
	var ve *VerifyError
	if scope == ScopeOverlayEntry && errors.As(err, &ve) {
		// An images or replicas entry can reach other objects of the
		// overlay; fall back to a patch that names this one object.
		p.files = map[string][]byte{}
		if err := p.overlayPatch(ch); err != nil {
			return nil, err
		}
		scope, err = ScopeOverlayPatch, verify(ctx, opts.Build, root, res, p.files, p.ref, ch)
	}
	if err != nil {
		return nil, err
	}
	return &Result{Files: p.files, Scope: scope}, nil
}

func (p *planner) plan(ch Change) (string, error) {
	old, exists := p.field(ch.Pointer)
	if !exists {
		if !isDataKey(p.ref, ch.Pointer) {
			return "", fmt.Errorf("%w: %s %s", origin.ErrFieldNotFound, p.ref, ch.Pointer)
		}
		return p.addKey(ch)
	}
	o, err := p.idx.Lookup(p.ref, ch.Pointer)
	if err != nil {
		return "", err
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

// read returns a file's content as changed so far.
func (p *planner) read(rel string) ([]byte, error) {
	if data, ok := p.files[rel]; ok {
		return data, nil
	}
	data, err := os.ReadFile(filepath.Join(p.root, filepath.FromSlash(rel)))
	if err != nil && errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return data, err
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
