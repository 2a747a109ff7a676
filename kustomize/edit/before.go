package edit

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// Before is a tree's render as kustomize.Build produced it, with its origin
// index. PlanSet plans every change against it and verifies against it, so
// a caller that has rendered the tree already (to read the current values)
// pays for no second render. It must be a render of Options.Build over the
// tree as it is on disk: the index's lines and columns are where the edits
// are spliced.
type Before struct {
	Result *kustomize.Result
	Index  *origin.Index
}

// errNoBefore is returned by Before's methods on an incomplete Before.
var errNoBefore = errors.New("edit: Before needs both a Result and an Index")

// NewBefore renders opts.Build once, with opts.Render, and indexes the
// render.
func NewBefore(ctx context.Context, opts Options) (*Before, error) {
	res, err := opts.render(ctx, opts.Build)
	if err != nil {
		return nil, err
	}
	idx, err := origin.NewIndex(opts.Build, res)
	if err != nil {
		return nil, fmt.Errorf("indexing the render: %w", err)
	}
	return &Before{Result: res, Index: idx}, nil
}

// Value returns the value the render holds at ch.Pointer of ch.Object and
// whether it holds one, so a caller can skip a field Git already holds or
// see that Git changed it, without a build. ch.Object is matched as
// origin.Index.Resolve matches it; an object the render lacks is an
// origin.ErrObjectNotFound.
func (b *Before) Value(ch Change) (any, bool, error) {
	if b == nil || b.Result == nil || b.Index == nil {
		return nil, false, errNoBefore
	}
	ref, err := b.Index.Resolve(ch.Object)
	if err != nil {
		return nil, false, err
	}
	u := b.object(ref)
	if u == nil {
		return nil, false, fmt.Errorf("%w: %s", origin.ErrObjectNotFound, ref)
	}
	v, ok := jsonptr.Get(u.Object, ch.Pointer)
	if ok && ch.Within != "" {
		return within(v, ch.Within)
	}
	return v, ok, nil
}

// object returns the rendered object ref names, nil when there is none.
func (b *Before) object(ref origin.ObjectRef) *unstructured.Unstructured {
	for _, u := range b.Result.Objects {
		if origin.RefOf(u) == ref {
			return u
		}
	}
	return nil
}
