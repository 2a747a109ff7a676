package drift

import (
	"bytes"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// entry is one managedFields entry with its field set parsed.
type entry struct {
	metav1.ManagedFieldsEntry
	set *fieldpath.Set
}

// parseEntries parses every managedFields entry of an object.
func parseEntries(mfs []metav1.ManagedFieldsEntry) ([]entry, error) {
	out := make([]entry, 0, len(mfs))
	for _, mf := range mfs {
		set := &fieldpath.Set{}
		if mf.FieldsV1 != nil && len(mf.FieldsV1.Raw) > 0 {
			if err := set.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
				return nil, fmt.Errorf("parsing managedFields of %s (%s): %w", mf.Manager, mf.Operation, err)
			}
		}
		out = append(out, entry{ManagedFieldsEntry: mf, set: set})
	}
	return out, nil
}

// ownership maps the live object's JSON pointers to the managedFields
// entries that own them.
type ownership map[string][]int

// owners indexes which entries own which pointer in the live object.
func owners(live map[string]any, entries []entry) ownership {
	idx := ownership{}
	for i, e := range entries {
		e.set.Iterate(func(p fieldpath.Path) {
			if ptr, ok := Pointer(live, p); ok {
				idx[ptr] = append(idx[ptr], i)
			}
		})
	}
	return idx
}

// modifier picks the writer to blame among entries: the most recent one
// that is not allow-listed, else the most recent of all. managedFields
// times have one-second resolution and the apiserver sorts entries by
// operation, time and name, so writers within one second tie; the later
// entry wins, which is deterministic if not always the true last writer.
func (d *Detector) modifier(entries []entry, idx []int) *refluxv1.Modifier {
	best := -1
	for _, i := range idx {
		if best < 0 || d.blameBefore(entries[i], entries[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	e := entries[best]
	m := &refluxv1.Modifier{Manager: e.Manager, Operation: string(e.Operation)}
	if e.Time != nil {
		t := *e.Time
		m.Time = &t
	}
	return m
}

// blameBefore reports whether a is a better writer to blame than b.
func (d *Detector) blameBefore(a, b entry) bool {
	if aa, ba := d.allowed(a), d.allowed(b); aa != ba {
		return !aa
	}
	return !a.Time.Before(b.Time)
}

// allowed reports whether an entry's writes are never drift.
func (d *Detector) allowed(e entry) bool {
	return d.opts.allowed[e.Manager] || d.opts.isFlux(e.ManagedFieldsEntry)
}

// blame finds the writer of the changed field: the owner of its pointer or
// of its nearest owned ancestor (an atomic list is owned as a whole).
// allowed is true when every such owner is allow-listed. A field live lacks
// (Remove) is owned by no one, and its pointer may be a Git index that
// means another element live, so the search starts at its parent, and its
// removal is never put down to an allow-listed owner of the parent.
func (d *Detector) blame(entries []entry, own ownership, c change) (mod *refluxv1.Modifier, allowed bool) {
	p := c.pointer
	if c.typ == refluxv1.ChangeRemove {
		p = parent(p)
	}
	for ; p != ""; p = parent(p) {
		idx := own[p]
		if len(idx) == 0 {
			continue
		}
		allowed = c.typ != refluxv1.ChangeRemove
		for _, i := range idx {
			allowed = allowed && d.allowed(entries[i])
		}
		return d.modifier(entries, idx), allowed
	}
	return nil, false
}

func parent(pointer string) string {
	for i := len(pointer) - 1; i >= 0; i-- {
		if pointer[i] == '/' {
			return pointer[:i]
		}
	}
	return ""
}
