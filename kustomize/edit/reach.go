package edit

import (
	"strconv"
	"strings"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// A replicas or images entry added to the built overlay applies to every
// object that overlay renders, so it may move fields of other objects: an
// image shared by two Deployments, two workloads of one name. Plan used to
// find out by building the tree with the entry and falling back to a patch
// naming the one object; a set decides it from the before render instead,
// erring towards the patch whenever the render cannot rule a field out.

// imageSet is what an images entry sets; empty fields are unset.
type imageSet struct{ newName, newTag, digest string }

// imagesReach reports whether an images entry named name, setting e,
// would rewrite an image of the before render other than the one at ptr
// of the object being edited.
func (p *planner) imagesReach(ptr, name string, e imageSet) bool {
	for _, u := range p.res.Objects {
		self := origin.RefOf(u) == p.ref
		reached := false
		walkImages("", u.Object, func(at, image string) {
			if self && at == ptr {
				return
			}
			if kustomize.ImageMatches(image, name) && kustomize.SetImage(image, e.newName, e.newTag, e.digest) != image {
				reached = true
			}
		})
		if reached {
			return true
		}
	}
	return false
}

// walkImages calls fn with the pointer and value of every image an images
// entry can rewrite in v: the image of each item of any list named
// containers or initContainers, at any depth. That is kustomize's
// LegacyFilter for the ImageTagTransformer; its field specs name a subset
// of these. It also looks inside container items, as LegacyFilter does,
// and does not skip CustomResourceDefinitions, which the field specs do
// not: both only make the answer safer.
func walkImages(ptr string, v interface{}, fn func(ptr, image string)) {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, c := range t {
			at := jsonptr.Append(ptr, k)
			if list, ok := c.([]interface{}); ok && (k == "containers" || k == "initContainers") {
				for i, it := range list {
					if m, ok := it.(map[string]interface{}); ok {
						if s, ok := m["image"].(string); ok {
							fn(jsonptr.Append(at, strconv.Itoa(i), "image"), s)
						}
					}
				}
			}
			walkImages(at, c, fn)
		}
	case []interface{}:
		for i, c := range t {
			walkImages(jsonptr.Append(ptr, strconv.Itoa(i)), c, fn)
		}
	}
}

// replicasReach reports whether a replicas entry naming name with count
// would set the replicas of an object of the before render other than the
// one being edited. kustomize matches the entry against every name an
// object had on its way through the layers; those are the declared name
// with some of its prefixes and suffixes, so each is part of the rendered
// name. An object whose name a patch rewrote, or whose name the index
// cannot explain, might have had any name.
func (p *planner) replicasReach(name string, count int64) bool {
	for _, u := range p.res.Objects {
		ref := origin.RefOf(u)
		if ref == p.ref || !replicaKinds[u.GetKind()] {
			continue
		}
		if !strings.Contains(u.GetName(), name) && !p.renamed(ref) {
			continue
		}
		spec, _ := u.Object["spec"].(map[string]interface{})
		if cur, ok := spec["replicas"]; !ok || !jsonptr.Equal(cur, count) {
			return true
		}
	}
	return false
}

// renamed reports whether the object's name may come from something other
// than its declaration and name affixes.
func (p *planner) renamed(ref origin.ObjectRef) bool {
	o, err := p.idx.Lookup(ref, "/metadata/name")
	if err != nil {
		return true
	}
	for _, l := range o.Chain {
		if l.Kind != origin.KindResource && l.Kind != origin.KindNameAffix {
			return true
		}
	}
	return false
}
