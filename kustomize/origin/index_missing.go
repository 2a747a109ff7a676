package origin

import (
	"fmt"
	"sort"
	"strings"
)

// notRendered explains an object missing from the render. When the tree
// pulls in objects reflux never renders (a remote base, a Helm chart, a
// generator plugin) the object may come from there: the error is then a
// *RefusedError naming the declaration to edit. Otherwise it names the
// closest rendered objects, since a wrong namespace or a kind typo is the
// usual cause.
func (x *Index) notRendered(ref ObjectRef) error {
	if len(x.unrendered) > 0 {
		u := x.unrendered[0]
		at := u.at
		return &RefusedError{Object: ref, Reason: u.reason, Edit: &at}
	}
	near := x.closest(ref, 3)
	if len(near) == 0 {
		return fmt.Errorf("%w: %s", ErrObjectNotFound, ref)
	}
	names := make([]string, len(near))
	for i, r := range near {
		names[i] = r.String()
	}
	return fmt.Errorf("%w: %s; closest rendered: %s", ErrObjectNotFound, ref, strings.Join(names, ", "))
}

// closest ranks rendered objects by how much of ref they share: name,
// kind, namespace, then a name that contains or is contained in ref's.
func (x *Index) closest(ref ObjectRef, n int) []ObjectRef {
	type scored struct {
		ref   ObjectRef
		score int
	}
	var all []scored
	for i, o := range x.objects {
		s := 0
		if o.ref.Name == ref.Name {
			s += 4
		} else if ref.Name != "" && (strings.Contains(o.ref.Name, ref.Name) || strings.Contains(ref.Name, o.ref.Name)) {
			s += 2
		}
		if strings.EqualFold(o.ref.Kind, ref.Kind) {
			s += 2
		}
		if o.ref.Namespace == ref.Namespace {
			s++
		}
		// Sharing only a namespace or only a kind is no hint.
		if s >= 4 {
			all = append(all, scored{x.objects[i].ref, s})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].score > all[j].score })
	out := make([]ObjectRef, 0, n)
	for _, s := range all {
		if len(out) == n {
			break
		}
		out = append(out, s.ref)
	}
	return out
}
