package drift

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// FieldOwners reports who owns, in live, those of the fields at pointers
// that live has: flux when Flux's own apply owns one, writer when a writer
// whose writes can be drift owns one. A field's owner is that of its
// nearest owned ancestor, as blame finds it (an atomic list is owned as a
// whole). Fields live lacks count for neither.
//
// It tells Flux's apply putting Git's values back from a person doing so
// (decide.LostToFlux): both leave the same values, but Flux's forced apply
// takes the fields, and a person's update keeps them. managedFields times
// cannot tell them apart when both writes fall in the same second.
func (d *Detector) FieldOwners(live *unstructured.Unstructured, pointers []string) (flux, writer bool, err error) {
	entries, err := parseEntries(live.GetManagedFields())
	if err != nil {
		return false, false, err
	}
	own := owners(live.Object, entries)
	for _, ptr := range pointers {
		if _, ok := jsonptr.Get(live.Object, ptr); !ok {
			continue
		}
		for p := ptr; p != ""; p = parent(p) {
			idx := own[p]
			if len(idx) == 0 {
				continue
			}
			for _, i := range idx {
				switch {
				case d.opts.isFlux(entries[i].ManagedFieldsEntry):
					flux = true
				case !d.allowed(entries[i]):
					writer = true
				}
			}
			break
		}
	}
	return flux, writer, nil
}
