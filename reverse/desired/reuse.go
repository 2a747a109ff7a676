package desired

import (
	"strings"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

// refusedButKnown are the refusals whose value still changes only with
// what Reusable compares: a value kustomize synthesises or a build
// annotation (the object's own document), a hash suffix (a generator's
// kustomization file or source, neither of which a reusable revision may
// change), a value of the Flux Kustomization's spec (its generation).
var refusedButKnown = map[origin.Reason]bool{
	origin.ReasonGenerated:           true,
	origin.ReasonHashSuffix:          true,
	origin.ReasonBuildMetadata:       true,
	origin.ReasonNoKustomizationFile: true,
}

// Reusable reports whether the object with key renders at each revision
// of targets exactly as it does in r, so a live change to it can be
// evaluated against r while those revisions are not rendered yet (issue
// 20). It is, when every file that differs between r's tree and a
// target's is one that can only change other objects:
//   - a resource file that declares none of the object's fields (a file of
//     whole objects changes only those), or
//   - a file r's tree did not have (at most a new resource).
//
// Anything else can change any object: a kustomization file (what it
// includes, patches and transforms), a patch, a generator's source (a
// new hash renames the generated object in every object that refers to
// it), or a file r's build may have read that the model does not know.
// Reusable is false whenever that cannot be told: r has no manifest or no
// complete index, a field's origin is refused for another reason than
// the ones whose files are known, or a target's manifest is unknown
// (nil). It is false for no targets at all.
//
// The caller also checks that r was built with the Kustomization's
// current spec and substitutions.
func (r *Render) Reusable(key ObjectKey, targets []*Manifest) bool {
	if r.Files == nil || r.Index == nil || r.IndexErr != nil || r.Index.ModelErr != nil || len(targets) == 0 {
		return false
	}
	var files map[string]bool
	for _, t := range targets {
		if t == nil {
			return false
		}
		if t.Revision == r.Revision {
			continue
		}
		d := r.deltaTo(t)
		if d.anyObject {
			return false
		}
		if files == nil {
			var ok bool
			if files, ok = r.objectFiles(key); !ok {
				return false
			}
		}
		for p := range d.resources {
			if files[p] {
				return false
			}
		}
	}
	return true
}

// delta is what changed between a render's tree and another revision's:
// the resource files, each of which changes only the objects it
// declares, and whether anything else changed, which can change any.
type delta struct {
	resources map[string]bool
	anyObject bool
}

// deltaTo works out the delta to t once per revision: a flush asks it for
// every parked change, under the intake's lock, and comparing two
// manifests of a large tree costs a pass over every file.
func (r *Render) deltaTo(t *Manifest) delta {
	r.deltaMu.Lock()
	defer r.deltaMu.Unlock()
	if d, ok := r.deltas[t.Revision]; ok {
		return d
	}
	d := delta{resources: map[string]bool{}}
	for p := range Changed(r.Files, t) {
		_, had := r.Files.Files[p]
		switch {
		case isKustomization(p):
			d.anyObject = true
		case r.Index.IsResourceFile(p):
			d.resources[p] = true
		case !had:
			// A new file: at most a new resource (a Flux-generated
			// kustomization lists every file).
		default:
			d.anyObject = true
		}
	}
	if r.deltas == nil || len(r.deltas) >= keepManifests {
		r.deltas = map[string]delta{}
	}
	r.deltas[t.Revision] = d
	return d
}

// objectFiles is every file the object's fields come from, through every
// layer that set or transformed them; false when a field's origin is not
// known.
func (r *Render) objectFiles(key ObjectKey) (map[string]bool, bool) {
	obj, ok := r.Objects[key]
	if !ok {
		return nil, false
	}
	fields, err := r.Index.Fields(origin.RefOf(obj))
	if err != nil {
		return nil, false
	}
	out := map[string]bool{}
	known := true
	add := func(file string) {
		switch _, isFile := r.Files.Files[file]; {
		case isFile:
			out[file] = true
		case strings.HasPrefix(file, "ConfigMap/"), strings.HasPrefix(file, "Secret/"):
			// Substitution data, not a file: the caller compares the
			// substitutions as a whole.
		default:
			known = false
		}
	}
	for _, f := range fields {
		if f.Refused != "" {
			known = known && refusedButKnown[f.Refused]
			continue
		}
		add(f.Origin.File)
		for _, l := range f.Origin.Chain {
			add(l.File)
		}
	}
	return out, known
}
