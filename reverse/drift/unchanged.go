package drift

import "github.com/reflux-dev/reflux/internal/jsonptr"

// Unchanged reports, without asking the apiserver, that in.Live cannot
// drift from in.Desired: only allowed managers (Flux, the control plane,
// reflux and the configured allow-list) own any of its fields, and every
// leaf in.Desired declares is live with the same value. Writes by allowed
// managers are never drift, so such an object has nothing to report, and
// the leaf check catches what managedFields cannot show: a field a human
// removed leaves no entry behind.
//
// It is the resync's prefilter: at a new revision or a restart, objects
// that only Flux touched cost no dry run. False means "ask the apiserver"
// (Detect), never "drifted": a value the server would normalise, a list
// the live object orders differently, or a held object all answer false.
func (d *Detector) Unchanged(in Input) bool {
	if in.validate() != nil || excluded(in.Live) != "" {
		return false
	}
	for _, e := range in.Live.GetManagedFields() {
		if !d.opts.allowed[e.Manager] {
			return false
		}
	}
	for k, want := range in.Desired.Object {
		switch k {
		case "status":
			continue // never applied through the main resource
		case "metadata":
			if !metadataContained(in.Live.Object["metadata"], want) {
				return false
			}
			continue
		}
		if !contained(in.Live.Object[k], want) {
			return false
		}
	}
	return true
}

// metadataContained checks the metadata Flux applies: labels,
// annotations and the rest, leaving out what the server sets.
func metadataContained(live, want any) bool {
	w, ok := want.(map[string]any)
	if !ok {
		return false
	}
	l, _ := live.(map[string]any)
	for k, v := range w {
		switch k {
		case "creationTimestamp", "resourceVersion", "uid", "generation", "managedFields":
			continue
		case "namespace":
			if v == "" {
				continue
			}
		}
		if !contained(l[k], v) {
			return false
		}
	}
	return true
}

// contained reports whether every leaf of want is in live with the same
// value. Maps may have more keys live (server defaults); lists must match
// element by element, since a list Git declares is owned whole or keyed.
func contained(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			lv, ok := l[k]
			if !ok && v != nil || !contained(lv, v) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			return false
		}
		for i := range w {
			if !contained(l[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return jsonptr.Equal(live, want)
	}
}
