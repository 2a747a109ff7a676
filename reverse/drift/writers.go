package drift

import (
	"bytes"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Writers returns the managedFields entries an update from old to cur
// wrote: the entries that are new, or whose time or fields changed. The
// live path uses it to tell Flux applying and reflux holding (never drift)
// from a human's edit without asking the apiserver.
//
// An update that only removed fields can leave no entry changed: the
// apiserver drops fields from their owners and keeps no entry for a
// manager that owns nothing. Writers then returns nil, and the caller must
// treat the writer as unknown.
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
		if !ok || !sameTime(prev.Time, e.Time) || !sameFields(prev.FieldsV1, e.FieldsV1) {
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
