package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// auditAttributor names users from the audit webhook's store. Audit events
// name objects by API group and resource, not kind, hence the mapper.
type auditAttributor struct {
	store  *audit.Store
	mapper meta.RESTMapper
}

var _ governor.Attributor = auditAttributor{}

// User implements governor.Attributor.
func (a auditAttributor) User(u *unstructured.Unstructured, manager string, at time.Time) observe.Who {
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
	if err != nil {
		return observe.Who{}
	}
	key := audit.ObjectKey{APIGroup: gvk.Group, Resource: m.Resource.Resource, Namespace: u.GetNamespace(), Name: u.GetName()}
	if w, ok := a.store.Lookup(key, manager, at); ok {
		return observe.Who{User: w.User, Groups: append([]string(nil), w.Groups...)}
	}
	return observe.Who{}
}
