package drift

import (
	"bytes"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Writers returns the managedFields entries an update from old to cur
// wrote: the entries that are new, or whose time or fields changed. The
// live path uses it to tell Flux applying and reflux holding (never drift)
// from a human's edit without asking the apiserver.
//
// An update that only removed fields can leave no entry changed: the
// apiserver drops fields from their owners and keeps no entry for a
// manager that owns nothing. Writers then returns nil, and the caller must
// treat the writer as unknown. An owner that only lost fields, with its
// time unchanged, did not write: `kubectl patch` removing a key Flux
// applied shrinks kustomize-controller's entry, and taking that for Flux
// writing would drop the change.
func Writers(old, cur *unstructured.Unstructured) []metav1.ManagedFieldsEntry {
	type key struct{ manager, operation, subresource string }
	before := map[key]metav1.ManagedFieldsEntry{}
	if old != nil {
		for _, e := range old.GetManagedFields() {
			before[key{e.Manager, string(e.Operation), e.Subresource}] = e
		}
	}
	var out []metav1.ManagedFieldsEntry
	for _, e := range cur.GetManagedFields() {
		prev, ok := before[key{e.Manager, string(e.Operation), e.Subresource}]
		switch {
		case !ok || !sameTime(prev.Time, e.Time):
			out = append(out, e)
		case !sameFields(prev.FieldsV1, e.FieldsV1) && !onlyLost(prev.FieldsV1, e.FieldsV1):
			out = append(out, e)
		}
	}
	return out
}

func sameTime(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

// onlyLost reports whether the fields cur owns are a subset of those prev
// owned: the entry lost fields to another write and gained none. Sets
// that cannot be read count as written, the safe side for a live change.
func onlyLost(prev, cur *metav1.FieldsV1) bool {
	if prev == nil || cur == nil {
		return false
	}
	var was, is fieldpath.Set
	if was.FromJSON(bytes.NewReader(prev.Raw)) != nil || is.FromJSON(bytes.NewReader(cur.Raw)) != nil {
		return false
	}
	return is.Difference(&was).Empty()
}

func sameFields(a, b *metav1.FieldsV1) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Raw, b.Raw)
}

// Allowed reports whether writes by manager are never drift: the control
// plane, an autoscaler, Flux, reflux and the configured allow-list.
func (d *Detector) Allowed(manager string) bool {
	return d.opts.allowed[manager]
}

// FluxOwned reports whether manager is Flux's own field owner, whose
// writes are Flux applying Git.
func (d *Detector) FluxOwned(manager string) bool {
	return manager == d.opts.fieldOwner
}

// Reverted reports whether Flux undoes everything manager writes, added
// fields included, at its next apply: kubectl-like managers,
// before-first-apply and kustomize-controller's --override-manager names
// (see StripRules). It matches by name alone, whatever the operation or
// subresource: `kubectl scale` writes spec.replicas through the scale
// subresource as "kubectl", and Flux's forced apply takes it back all the
// same.
func (d *Detector) Reverted(manager string) bool {
	for _, r := range d.opts.strip {
		if r.Exact && manager == r.Name || !r.Exact && strings.HasPrefix(manager, r.Name) {
			return true
		}
	}
	return false
}

// StatusOnly reports whether an update from old to cur changed nothing
// but the status, and the bookkeeping every write changes (the resource
// version and managedFields): a status write, which is never drift. Such
// a write in the same second as the writer's last one leaves
// managedFields as they were, and Writers, finding no writer, would take
// it for someone removing a field.
func StatusOnly(old, cur *unstructured.Unstructured) bool {
	if old == nil || cur == nil {
		return false
	}
	return sameExcept(old.Object, cur.Object, func(k string) bool { return k == "status" }, func(k string, a, b any) bool {
		if k != "metadata" {
			return equality.Semantic.DeepEqual(a, b)
		}
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if !aok || !bok {
			return equality.Semantic.DeepEqual(a, b)
		}
		return sameExcept(am, bm, func(k string) bool { return k == "resourceVersion" || k == "managedFields" },
			func(_ string, a, b any) bool { return equality.Semantic.DeepEqual(a, b) })
	})
}

// sameExcept reports whether a and b hold the same keys, skip's aside,
// with values same says are the same.
func sameExcept(a, b map[string]any, skip func(string) bool, same func(k string, a, b any) bool) bool {
	n := 0
	for k, bv := range b {
		if skip(k) {
			continue
		}
		n++
		av, ok := a[k]
		if !ok || !same(k, av, bv) {
			return false
		}
	}
	for k := range a {
		if !skip(k) {
			n--
		}
	}
	return n == 0
}
