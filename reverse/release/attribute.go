package release

import (
	"bytes"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// owners maps the live object's JSON pointers to the managedFields
// entries that own them, resolved with reverse/drift's Pointer so that
// keyed list elements land on the index live gives them.
type owners map[string][]metav1.ManagedFieldsEntry

func ownersOf(live *unstructured.Unstructured) (owners, error) {
	own := owners{}
	for _, e := range live.GetManagedFields() {
		if e.FieldsV1 == nil || len(e.FieldsV1.Raw) == 0 {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return nil, fmt.Errorf("parsing managedFields of %s (%s): %w", e.Manager, e.Operation, err)
		}
		set.Iterate(func(p fieldpath.Path) {
			if ptr, ok := drift.Pointer(live.Object, p); ok {
				own[ptr] = append(own[ptr], e)
			}
		})
	}
	return own, nil
}

// blame names the writer of a drifted field: the most recent owner of
// the field, or of its nearest owned ancestor (an atomic value is owned
// whole), that is not helm-controller. helm-controller's own writes are
// the desired state, so a field only it owns has no known writer. A field
// live lacks is owned by no one: the apiserver drops what a write
// removes, so the search starts at its parent.
func (o owners) blame(pointer string, typ refluxv1.ChangeType) *refluxv1.Modifier {
	p := pointer
	if typ == refluxv1.ChangeRemove {
		p = parent(p)
	}
	for ; p != ""; p = parent(p) {
		entries := o[p]
		if len(entries) == 0 {
			continue
		}
		return latest(entries)
	}
	return nil
}

// latest returns the most recent entry not helm-controller's; on a tie
// (managedFields times have one-second resolution) the later entry.
func latest(entries []metav1.ManagedFieldsEntry) *refluxv1.Modifier {
	var best *metav1.ManagedFieldsEntry
	for i := range entries {
		e := &entries[i]
		if e.Manager == FieldOwner {
			continue
		}
		if best == nil || !e.Time.Before(best.Time) {
			best = e
		}
	}
	if best == nil {
		return nil
	}
	m := &refluxv1.Modifier{Manager: best.Manager, Operation: string(best.Operation)}
	if best.Time != nil {
		t := *best.Time
		m.Time = &t
	}
	return m
}

func parent(pointer string) string {
	if i := strings.LastIndexByte(pointer, '/'); i >= 0 {
		return pointer[:i]
	}
	return ""
}
