package edit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// Change asks for one leaf of one rendered object to hold Value.
type Change struct {
	// Object is the rendered object; a generated ConfigMap or Secret may be
	// named without its hash suffix.
	Object origin.ObjectRef
	// Pointer is the JSON pointer of the leaf. It may name a new key of a
	// ConfigMap's or Secret's data, or a new key under a HelmRelease's
	// spec.values (with the maps above it), which is then added.
	Pointer string
	// Value is the new value as rendered: a string, bool, int64 or
	// float64. Secret data values are base64, as in the rendered object;
	// generators get them decoded.
	Value interface{}
	// Within, when set, is a pointer into the YAML document that the
	// field, a generated ConfigMap's data value read from a file, holds:
	// a values file a HelmRelease's spec.valuesFrom takes. The change is
	// then of that key in the file, its line spliced and the rest of the
	// file kept; Value is the key's new value. One change of a set may
	// edit a given file this way.
	Within string
	// Remove asks for the field (a leaf, or everything below a map or
	// list) to be absent instead; Value is then ignored.
	Remove bool
}

// HeldBy reports whether a render whose field holds v (found false: the
// field is absent) already has what the change asks for.
func (ch Change) HeldBy(v any, found bool) bool {
	if ch.Remove {
		return !found
	}
	return found && jsonptr.Equal(v, ch.Value)
}

// Options configures Plan, PlanAll and PlanSet.
type Options struct {
	// Build is how the tree is rendered; Build.Root is the tree to edit.
	Build kustomize.BuildOptions
	// AllowSharedFiles lets the plan write a document that feeds more than
	// one rendered object or overlay. Off by default: the narrowest scope
	// is the overlay being built.
	AllowSharedFiles bool
	// Render runs every build this package does; nil means
	// kustomize.Build. A build of a large tree takes minutes, so callers
	// count, trace or time them here.
	Render func(context.Context, kustomize.BuildOptions) (*kustomize.Result, error)
}

// render builds opts with o.Render.
func (o Options) render(ctx context.Context, opts kustomize.BuildOptions) (*kustomize.Result, error) {
	if o.Render == nil {
		return kustomize.Build(ctx, opts)
	}
	return o.Render(ctx, opts)
}

// Result is a verified plan.
type Result struct {
	// Files holds the new content of every changed or created file,
	// keyed by path relative to the root, slash separated.
	Files map[string][]byte
	// Scope says where the change was written.
	Scope string
}

// The scopes a Result can have.
const (
	// ScopeOrigin: the value was changed where it is declared.
	ScopeOrigin = "origin"
	// ScopeOverlayEntry: a replicas or images entry was added to the overlay.
	ScopeOverlayEntry = "overlay-entry"
	// ScopeOverlayPatch: a strategic-merge patch of the overlay was written.
	ScopeOverlayPatch = "overlay-patch"
)

// Sentinel errors callers branch on.
var (
	// ErrUnsupported is returned for origins this package cannot edit.
	ErrUnsupported = errors.New("edit not supported")
	// ErrShared is returned when only a shared file could take the change
	// and AllowSharedFiles is off and no overlay could take it.
	ErrShared = errors.New("origin is shared")
	// ErrConflict is returned for a change of a set that names a field an
	// earlier change of the set already sets, or whose source an earlier
	// change rewrote.
	ErrConflict = errors.New("conflicts with an earlier change of the set")
)

// SetResult is a verified plan of a set of changes.
type SetResult struct {
	// Result holds the files of every planned change, verified together,
	// and the widest scope any of them needed. Write applies them.
	Result
	// Planned lists the changes the files make, in the order given.
	Planned []Planned
	// Unchanged lists the changes whose field already held the value in
	// the before render; nothing is written for them.
	Unchanged []Change
	// Refused lists the changes that could not be planned. The others
	// were planned and verified without them.
	Refused []Refusal
}

// Planned is one change of a set that the plan makes.
type Planned struct {
	// Index is the change's position in the set.
	Index  int
	Change Change
	// Scope says where the change was written.
	Scope string
}

// Refusal is one change of a set that could not be planned.
type Refusal struct {
	// Index is the change's position in the set.
	Index  int
	Change Change
	// Err says why: it wraps ErrUnsupported, ErrShared, ErrConflict,
	// origin.ErrFieldNotFound or origin.ErrObjectNotFound, or is an
	// *origin.RefusedError, for callers to branch on.
	Err error
}

// FieldDiff is one leaf that differs between two renders.
type FieldDiff struct {
	Object  string
	Pointer string
	Before  interface{}
	After   interface{}
	// Gone is true when the leaf is absent after (After is then nil).
	Gone bool
}

// String renders the diff as OBJECT POINTER: BEFORE -> AFTER.
func (d FieldDiff) String() string {
	if d.Gone {
		return fmt.Sprintf("%s %s: %v -> (absent)", d.Object, d.Pointer, d.Before)
	}
	return fmt.Sprintf("%s %s: %v -> %v", d.Object, d.Pointer, d.Before, d.After)
}

// VerifyError reports that a plan moved something else, or did not move
// the intended fields to their values.
type VerifyError struct {
	// Moved is every leaf that differs between the renders before and
	// after the plan.
	Moved []FieldDiff
	// Missed lists the requested fields that do not hold their value
	// after the plan: Before is the value they hold, After the one asked.
	Missed []FieldDiff
}

// Error lists every leaf that moved, then every field that missed.
func (e *VerifyError) Error() string {
	var parts []string
	for _, d := range e.Moved {
		parts = append(parts, d.String())
	}
	msg := "edit verification failed, the render changed unexpectedly: " + strings.Join(parts, "; ")
	if len(e.Missed) > 0 {
		parts = parts[:0]
		for _, d := range e.Missed {
			parts = append(parts, d.String())
		}
		msg += "; not reached: " + strings.Join(parts, "; ")
	}
	return msg
}
