package drift

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// maxWritten bounds a Pending record's written fields, as the CRD does.
const maxWritten = 256

// Written returns the writer to blame for a live object's latest change
// and the fields it holds, with their live values: what a Pending record
// says before any render can tell which of them diverge from Git. It needs
// no render and no request, so the live path can record it at once. The
// writer is the most recent one whose writes can be drift; nil when every
// writer's writes are never drift (Flux, the control plane, allow-listed
// managers).
func (d *Detector) Written(live *unstructured.Unstructured) (*refluxv1.Modifier, []refluxv1.WrittenField, error) {
	entries, err := parseEntries(live.GetManagedFields())
	if err != nil {
		return nil, nil, err
	}
	best := -1
	for i, e := range entries {
		if d.allowed(e) {
			continue
		}
		if best < 0 || d.blameBefore(e, entries[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil, nil, nil
	}
	mod := d.modifier(entries, []int{best})
	var changes []change
	entries[best].set.Leaves().Iterate(func(p fieldpath.Path) {
		if ptr, v, ok := resolve(live.Object, p); ok && !isMetadataBookkeeping(ptr) {
			changes = append(changes, change{pointer: ptr, typ: refluxv1.ChangeAdd, live: v}) // live only: masked as "***"
		}
	})
	if gvk := live.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Secret" {
		maskSecret(changes)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].pointer < changes[j].pointer })
	out := make([]refluxv1.WrittenField, 0, min(len(changes), maxWritten))
	for _, c := range changes[:min(len(changes), maxWritten)] {
		v, err := encode(c.live, true)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding %s: %w", c.pointer, err)
		}
		out = append(out, refluxv1.WrittenField{Pointer: c.pointer, LiveValue: v})
	}
	return mod, out, nil
}

// isMetadataBookkeeping reports whether a pointer is the apiserver's own
// bookkeeping rather than something a writer set.
func isMetadataBookkeeping(ptr string) bool {
	switch ptr {
	case "/metadata/resourceVersion", "/metadata/generation", "/metadata/uid", "/metadata/creationTimestamp":
		return true
	}
	return false
}
