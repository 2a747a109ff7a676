package origin

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/kustomize"
)

// Index maps every leaf of every rendered object to its origin.
type Index struct {
	objects []*objectIndex
	byRef   map[ObjectRef]*objectIndex
	// ModelErr is set when the model could not be built; every field is
	// then refused with ReasonModelFailed.
	ModelErr error
	// unrendered are the declarations whose objects are absent from the
	// render: remote bases (never fetched), Helm charts and generator
	// plugins (never run).
	unrendered []unrendered
	// resourceFiles are the files the build read as resources and as
	// nothing else.
	resourceFiles map[string]bool
}

type unrendered struct {
	reason Reason
	at     Layer
}

type objectIndex struct {
	ref     ObjectRef
	aliases []ObjectRef
	fields  []Field
	byPtr   map[string]int
	// refused is set when every field of the object is refused, and edit
	// is then what to change instead: a field the render lacks is refused
	// too, since what the model does not run (a plugin) may set it.
	refused Reason
	edit    *Layer
}

// Build renders opts with kustomize.Build and indexes the result.
func Build(ctx context.Context, opts kustomize.BuildOptions) (*Index, *kustomize.Result, error) {
	res, err := kustomize.Build(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	idx, err := NewIndex(opts, res)
	if err != nil {
		return nil, nil, err
	}
	return idx, res, nil
}

// NewIndex models the kustomization graph of opts and cross-checks the
// model against res, the render kustomize.Build produced for the same opts.
func NewIndex(opts kustomize.BuildOptions, res *kustomize.Result) (*Index, error) {
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("resolving root: %w", err)
	}
	b := &builder{root: root, opts: opts, res: res, features: map[Reason]bool{}}
	idx := &Index{}
	objs, err := b.model()
	if err != nil {
		idx.ModelErr = fmt.Errorf("modelling %s: %w", res.Path, err)
		objs = nil
	}
	idx.resourceFiles = map[string]bool{}
	for p := range b.resourceFiles {
		if !b.otherFiles[p] {
			idx.resourceFiles[p] = true
		}
	}
	for _, s := range b.sites {
		if s.adds {
			idx.unrendered = append(idx.unrendered, unrendered{reason: s.reason, at: s.at})
		}
	}
	c := newChecker(b, objs, idx.ModelErr != nil)
	// Learn every object's rendered name first: name references may point
	// at objects rendered later.
	for _, u := range res.Objects {
		if o, _ := c.match(u); o != nil {
			c.rendered[o] = u.GetName()
		}
	}
	idx.byRef = make(map[ObjectRef]*objectIndex, len(res.Objects))
	for _, u := range res.Objects {
		oi := c.check(u)
		idx.objects = append(idx.objects, oi)
		idx.byRef[oi.ref] = oi
	}
	return idx, nil
}

// IsResourceFile reports whether the build read the file at p (relative
// to the root, slash separated) as a resource: a file of whole objects,
// which changes no other object than those it declares. A patch, a
// generator's source or a transformer's configuration can change any
// object; none of them is a resource file.
func (x *Index) IsResourceFile(p string) bool {
	return x.resourceFiles[p]
}

// Objects lists the rendered objects in render order.
func (x *Index) Objects() []ObjectRef {
	out := make([]ObjectRef, 0, len(x.objects))
	for _, o := range x.objects {
		out = append(out, o.ref)
	}
	return out
}

// Fields returns every leaf of the object, in pointer order.
func (x *Index) Fields(ref ObjectRef) ([]Field, error) {
	o, err := x.find(ref)
	if err != nil {
		return nil, err
	}
	return append([]Field(nil), o.fields...), nil
}

// Lookup returns the origin of the leaf at pointer in the object. A refused
// field returns a *RefusedError.
func (x *Index) Lookup(ref ObjectRef, pointer string) (Origin, error) {
	o, err := x.find(ref)
	if err != nil {
		return Origin{}, err
	}
	i, ok := o.byPtr[pointer]
	if !ok && o.refused != "" {
		return Origin{}, &RefusedError{Object: o.ref, Pointer: pointer, Reason: o.refused, Edit: o.edit}
	}
	if !ok {
		return Origin{}, fmt.Errorf("%w: %s %s", ErrFieldNotFound, o.ref, pointer)
	}
	f := o.fields[i]
	if f.Refused != "" {
		return Origin{}, &RefusedError{Object: o.ref, Pointer: pointer, Reason: f.Refused, Edit: f.Edit}
	}
	return f.Origin, nil
}

// Resolve returns the rendered ref matching ref. Kind is matched without
// regard to case, an empty Group matches any group, and a generated ConfigMap or Secret matches without its hash
// suffix; an ambiguous ref is an error.
func (x *Index) Resolve(ref ObjectRef) (ObjectRef, error) {
	o, err := x.find(ref)
	if err != nil {
		return ObjectRef{}, err
	}
	return o.ref, nil
}

func (x *Index) find(ref ObjectRef) (*objectIndex, error) {
	if o, ok := x.byRef[ref]; ok {
		return o, nil
	}
	var found []*objectIndex
	for _, o := range x.objects {
		for _, r := range append([]ObjectRef{o.ref}, o.aliases...) {
			if strings.EqualFold(r.Kind, ref.Kind) && r.Namespace == ref.Namespace && r.Name == ref.Name &&
				(ref.Group == "" || strings.EqualFold(r.Group, ref.Group)) {
				found = append(found, o)
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, x.notRendered(ref)
	case 1:
		return found[0], nil
	}
	for _, o := range found {
		if o.ref == ref {
			return o, nil
		}
	}
	return nil, fmt.Errorf("%s is ambiguous: matches %s and %s", ref, found[0].ref, found[1].ref)
}

// RefOf returns the ObjectRef of a rendered object.
func RefOf(u *unstructured.Unstructured) ObjectRef {
	return ObjectRef{Group: u.GroupVersionKind().Group, Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
