package drift

import (
	"fmt"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// compareClientSide handles a dry run refused for an immutable field: with
// no server-side merge to compare with, it compares the fields Git declares
// with live, reporting only Update and Remove (live's extra fields would
// include every default). Flux reverts them only by recreating the object.
func (d *Detector) compareClientSide(in Input, recreate bool) ([]Field, error) {
	git := in.Desired.DeepCopy()
	if err := normalizeDesired(git); err != nil {
		return nil, fmt.Errorf("normalizing desired object: %w", err)
	}
	live, err := withoutIgnored(in.Live, in.IgnorePaths)
	if err != nil {
		return nil, err
	}
	if git, err = withoutIgnored(git, in.IgnorePaths); err != nil {
		return nil, err
	}
	entries, err := parseEntries(live.GetManagedFields())
	if err != nil {
		return nil, err
	}
	keys := listKeys{}
	keys.add(entries)
	df := &differ{keys: keys}
	df.object(live.Object, git.Object, git.Object)
	declared := df.out[:0:0]
	for _, c := range df.out {
		if c.typ != refluxv1.ChangeAdd {
			c.reverts = recreate
			declared = append(declared, c)
		}
	}
	changes, mods := d.attribute(live.Object, entries, declared)
	return d.fields(in.Live, changes, mods)
}
