package controllers

import (
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/ssa/jsondiff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// writtenBySelfOrFlux reports whether the newest managedFields entry is
// kustomize-controller's or reflux's own: such a write is Flux applying
// Git, or reflux holding, never a human's drift.
func writtenBySelfOrFlux(u *unstructured.Unstructured) bool {
	var newest string
	var newestTime int64 = -1
	for _, mf := range u.GetManagedFields() {
		if mf.Time == nil {
			continue
		}
		if t := mf.Time.UnixNano(); t >= newestTime {
			newestTime, newest = t, mf.Manager
		}
	}
	return newest == "kustomize-controller" || newest == refluxv1.FieldManager
}

// held reports whether the live object carries reflux's hold.
func held(u *unstructured.Unstructured) bool {
	a := u.GetAnnotations()
	return a[ReconcileAnnotation] == ReconcileDisabled && a[HeldByAnnotation] != ""
}

// ignorePaths returns the Kustomization's spec.ignore paths that apply to
// the object, as kustomize-controller compiles them for drift detection.
func ignorePaths(ks *kustomizev1.Kustomization, obj *unstructured.Unstructured) []string {
	var paths []string
	for _, rule := range ks.Spec.Ignore {
		if rule.Target != nil {
			sel, err := jsondiff.NewSelectorRegex(&jsondiff.Selector{
				Group: rule.Target.Group, Version: rule.Target.Version, Kind: rule.Target.Kind,
				Name: rule.Target.Name, Namespace: rule.Target.Namespace,
				AnnotationSelector: rule.Target.AnnotationSelector, LabelSelector: rule.Target.LabelSelector,
			})
			if err != nil || !sel.MatchUnstructured(obj) {
				continue
			}
		}
		paths = append(paths, rule.Paths...)
	}
	return paths
}

// groupOf returns the API group of an apiVersion.
func groupOf(apiVersion string) string {
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// declaresLiveValues reports whether want, the desired object of the
// applied revision, now holds every value a record saw live: the drift was
// merged into Git.
func declaresLiveValues(want *unstructured.Unstructured, fields []refluxv1.DriftField) bool {
	for _, f := range fields {
		got, found := jsonptr.Get(want.Object, f.Pointer)
		switch f.ChangeType {
		case refluxv1.ChangeRemove:
			if found {
				return false
			}
		default:
			if !found || !jsonptr.Matches(got, f.LiveValue) {
				return false
			}
		}
	}
	return true
}

// auditKey names a live object the way audit events do.
func (e *Engine) auditKey(u *unstructured.Unstructured) (audit.ObjectKey, bool) {
	if e.Watcher == nil || e.Watcher.mapper == nil {
		return audit.ObjectKey{}, false
	}
	gvk := u.GroupVersionKind()
	m, err := e.Watcher.mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
	if err != nil {
		return audit.ObjectKey{}, false
	}
	return audit.ObjectKey{APIGroup: gvk.Group, Resource: m.Resource.Resource, Namespace: u.GetNamespace(), Name: u.GetName()}, true
}

// schemaGVK parses an apiVersion and kind.
func schemaGVK(apiVersion, kind string) schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(apiVersion, kind)
}

// readyStatus is the Kustomization's Ready status, "" when unset.
func readyStatus(ks *kustomizev1.Kustomization) string {
	for _, c := range ks.Status.Conditions {
		if c.Type == "Ready" {
			return string(c.Status)
		}
	}
	return ""
}
