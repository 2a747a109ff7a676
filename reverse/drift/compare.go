package drift

import (
	"encoding/json"
	"fmt"
	"sort"

	ssajsondiff "github.com/fluxcd/pkg/ssa/jsondiff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// compare turns the live object and Flux's dry-run result into fields,
// reading Git's values from the rendered object as Git wrote them.
func (d *Detector) compare(in Input, dry *unstructured.Unstructured) ([]Field, error) {
	live, err := withoutIgnored(in.Live, in.IgnorePaths)
	if err != nil {
		return nil, err
	}
	if dry, err = withoutIgnored(dry, in.IgnorePaths); err != nil {
		return nil, err
	}
	src, err := withoutIgnored(in.Desired, in.IgnorePaths)
	if err != nil {
		return nil, err
	}
	liveEntries, err := parseEntries(live.GetManagedFields())
	if err != nil {
		return nil, err
	}
	dryEntries, err := parseEntries(dry.GetManagedFields())
	if err != nil {
		return nil, err
	}
	keys := listKeys{}
	keys.add(dryEntries)
	keys.add(liveEntries)

	df := &differ{keys: keys}
	df.object(live.Object, dry.Object, src.Object)
	changes, mods := d.attribute(live.Object, liveEntries, df.out)
	cleanup := !merges(in.Desired, in.Live)
	for _, a := range d.undeclared(live.Object, src.Object, liveEntries, d.declared(dryEntries), cleanup) {
		changes = append(changes, a.change)
		mods = append(mods, a.modifier)
	}
	return d.fields(in.Live, changes, mods)
}

// attribute finds who wrote each changed field, and drops the changes only
// allow-listed managers wrote: the HPA scaling a Deployment whose replicas
// Git declares, or Flux itself having applied another revision than the
// one rendered, is not live drift.
func (d *Detector) attribute(live map[string]any, entries []entry, changes []change) ([]change, []*refluxv1.Modifier) {
	own := owners(live, entries)
	out := changes[:0:0]
	var mods []*refluxv1.Modifier
	for _, c := range changes {
		mod, allowed := d.blame(entries, own, c)
		if allowed {
			continue
		}
		out = append(out, c)
		mods = append(mods, mod)
	}
	return out, mods
}

// object compares everything but metadata and status, as fluxcd/pkg/ssa's
// jsondiff does, plus the labels and annotations Git sets: like Flux, it
// does not count labels and annotations live has and Git lacks (core
// controllers add them); undeclared reports those by owner instead.
func (d *differ) object(live, merged, src map[string]any) {
	for _, part := range []string{"labels", "annotations"} {
		l, lok, _ := unstructured.NestedFieldNoCopy(live, "metadata", part)
		m, mok, _ := unstructured.NestedFieldNoCopy(merged, "metadata", part)
		s, _, _ := unstructured.NestedFieldNoCopy(src, "metadata", part)
		if !mok || m == nil {
			continue
		}
		before := len(d.out)
		at := loc{}.field("metadata").field(part)
		if !lok {
			d.emit(at, refluxv1.ChangeRemove, prefer(s, m), nil)
			continue
		}
		d.walk(at, l, m, s)
		kept := d.out[:before]
		for _, c := range d.out[before:] {
			if c.typ != refluxv1.ChangeAdd && !bookkeeping[c.pointer] {
				kept = append(kept, c)
			}
		}
		d.out = kept
	}
	strip := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			if k != "metadata" && k != "status" {
				out[k] = v
			}
		}
		return out
	}
	d.maps(loc{}, strip(live), strip(merged), strip(src))
}

// declared is the set of fields Flux's apply declares: the field owner's
// Apply entry in the dry-run result.
func (d *Detector) declared(dryEntries []entry) *fieldpath.Set {
	for _, e := range dryEntries {
		if d.opts.isFlux(e.ManagedFieldsEntry) {
			return e.set
		}
	}
	return &fieldpath.Set{}
}

// withoutIgnored removes ignore paths from a copy of obj, as Flux strips
// spec.ignore paths from both sides before it compares.
func withoutIgnored(obj *unstructured.Unstructured, paths []string) (*unstructured.Unstructured, error) {
	if len(paths) == 0 {
		return obj, nil
	}
	out := obj.DeepCopy()
	if err := ssajsondiff.ApplyPatchToUnstructured(out, ssajsondiff.GenerateRemovePatch(paths...)); err != nil {
		return nil, fmt.Errorf("removing ignore paths %q: %w", paths, err)
	}
	return out, nil
}

// fields masks Secret values, encodes values as compact JSON and orders the
// fields by pointer.
func (d *Detector) fields(live *unstructured.Unstructured, changes []change, mods []*refluxv1.Modifier) ([]Field, error) {
	if gvk := live.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Secret" {
		maskSecret(changes)
	}
	out := make([]Field, 0, len(changes))
	// The diff covers what Flux declares and the ownership walk the rest,
	// so they should not meet; if they do, report the field once. Change
	// types stay apart: an element only Git has may share its (Git) index
	// with a different element live added.
	type key struct {
		pointer string
		typ     refluxv1.ChangeType
	}
	seen := map[key]bool{}
	for i, c := range changes {
		if seen[key{c.pointer, c.typ}] {
			continue
		}
		seen[key{c.pointer, c.typ}] = true
		f := Field{Pointer: c.pointer, GitPointer: c.gitPointer, ChangeType: c.typ, FluxReverts: c.reverts, Modifier: mods[i]}
		var err error
		if f.GitValue, err = encode(c.git, c.typ != refluxv1.ChangeAdd); err != nil {
			return nil, fmt.Errorf("encoding %s: %w", c.pointer, err)
		}
		if f.LiveValue, err = encode(c.live, c.typ != refluxv1.ChangeRemove); err != nil {
			return nil, fmt.Errorf("encoding %s: %w", c.pointer, err)
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out, nil
}

// encode writes a present value as compact JSON; an absent one as "".
func encode(v any, present bool) (string, error) {
	if !present {
		return "", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}
