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
	for i, o := range near {
		names[i] = o.ref.String()
		if len(o.aliases) > 0 {
			// A generator's object is asked for by the generator's name;
			// the rendered one carries a hash (issue 21 §7).
			names[i] += fmt.Sprintf(" (generated: its name carries a hash suffix; ask for %s)", o.aliases[0])
		}
	}
	return fmt.Errorf("%w: %s; closest rendered: %s", ErrObjectNotFound, ref, strings.Join(names, ", "))
}

// closest ranks rendered objects by how much of ref they share: name,
// kind, namespace, then a name that contains or is contained in ref's.
// An object of ref's kind whose name starts with ref's name comes before
// objects of other kinds with ref's very name: it is likely a generator's
// object, its name suffixed with a hash, asked for by the generator's name,
// and an app's other objects often share that name (issue 21 §7).
func (x *Index) closest(ref ObjectRef, n int) []*objectIndex {
	type scored struct {
		o     *objectIndex
		score int
	}
	var all []scored
	for _, o := range x.objects {
		s := 0
		sameKind := strings.EqualFold(o.ref.Kind, ref.Kind)
		switch {
		case o.ref.Name == ref.Name:
			s += 8
		case sameKind && ref.Name != "" && strings.HasPrefix(o.ref.Name, ref.Name+"-"):
			s += 6
		case ref.Name != "" && (strings.Contains(o.ref.Name, ref.Name) || strings.Contains(ref.Name, o.ref.Name)):
			s += 4
		}
		if sameKind {
			s += 4
		}
		if o.ref.Namespace == ref.Namespace {
			s++
		}
		// Sharing only a namespace or only a kind is no hint.
		if s >= 8 {
			all = append(all, scored{o, s})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].score > all[j].score })
	out := make([]*objectIndex, 0, n)
	for _, s := range all {
		if len(out) == n {
			break
		}
		out = append(out, s.o)
	}
	return out
}
