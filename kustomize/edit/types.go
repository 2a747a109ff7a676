package edit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// Change asks for one leaf of one rendered object to hold Value.
type Change struct {
	// Object is the rendered object; a generated ConfigMap or Secret may be
	// named without its hash suffix.
	Object origin.ObjectRef
	// Pointer is the JSON pointer of the leaf. It may name a new key of a
	// ConfigMap's or Secret's data, which is then added.
	Pointer string
	// Value is the new value as rendered: a string, bool, int64 or
	// float64. Secret data values are base64, as in the rendered object;
	// generators get them decoded.
	Value interface{}
}

// Options configures Plan.
type Options struct {
	// Build is how the tree is rendered; Build.Root is the tree to edit.
	Build kustomize.BuildOptions
	// AllowSharedFiles lets the plan write a document that feeds more than
	// one rendered object or overlay. Off by default: the narrowest scope
	// is the overlay being built.
	AllowSharedFiles bool
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
)

// FieldDiff is one leaf that differs between two renders.
type FieldDiff struct {
	Object  string
	Pointer string
	Before  interface{}
	After   interface{}
}

// String renders the diff as OBJECT POINTER: BEFORE -> AFTER.
func (d FieldDiff) String() string {
	return fmt.Sprintf("%s %s: %v -> %v", d.Object, d.Pointer, d.Before, d.After)
}

// VerifyError reports that a planned change moved something else, or
// not the intended field.
type VerifyError struct {
	Moved []FieldDiff
}

// Error lists every leaf that moved.
func (e *VerifyError) Error() string {
	var parts []string
	for _, d := range e.Moved {
		parts = append(parts, d.String())
	}
	return "edit verification failed, the render changed unexpectedly: " + strings.Join(parts, "; ")
}
