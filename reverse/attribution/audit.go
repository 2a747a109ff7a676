package attribution

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// Audit names users from the audit webhook's store. Audit events name
// objects by API group and resource, not kind, hence the mapper.
type Audit struct {
	Store  *audit.Store
	Mapper meta.RESTMapper
}

var (
	_ governor.Attributor = Audit{}
	_ governor.Deletions  = Audit{}
)

// User implements governor.Attributor.
func (a Audit) User(u *unstructured.Unstructured, manager string, at time.Time) observe.Who {
	key, ok := a.key(u)
	if !ok {
		return observe.Who{}
	}
	if w, ok := a.Store.Lookup(key, manager, at); ok {
		return observe.Who{User: w.User, Groups: append([]string(nil), w.Groups...)}
	}
	return observe.Who{}
}

// Deleter implements governor.Attributor.
func (a Audit) Deleter(u *unstructured.Unstructured, at time.Time) (governor.Deleter, bool) {
	key, ok := a.key(u)
	if !ok {
		// A kind the mapper does not know is not in the audit log either:
		// waiting would not help.
		return governor.Deleter{}, true
	}
	w, ok := a.Store.LookupDelete(key, at)
	if !ok {
		return governor.Deleter{}, false
	}
	return governor.Deleter{User: w.User, Flux: isKustomizeController(w), Helm: isHelmController(w)}, true
}

// DeletedSince implements governor.Deletions: when u was last deleted
// after since, as the audit log says.
func (a Audit) DeletedSince(u *unstructured.Unstructured, since time.Time) (time.Time, bool) {
	key, ok := a.key(u)
	if !ok {
		return time.Time{}, false
	}
	w, ok := a.Store.DeletedSince(key, since)
	return w.Time, ok
}

// Writer implements governor.Attributor: the latest update or patch of
// u at or before at by a writer whose writes can be drift.
func (a Audit) Writer(u *unstructured.Unstructured, at time.Time, benign func(manager string) bool) (governor.AuditedWrite, bool) {
	key, ok := a.key(u)
	if !ok {
		return governor.AuditedWrite{}, false
	}
	w, ok := a.Store.Latest(key, at, func(w audit.Write) bool {
		if w.Verb != "update" && w.Verb != "patch" && w.Verb != "apply" {
			return false
		}
		aw := auditedWrite(key, w)
		return !aw.Flux && !benign(aw.Manager)
	})
	if !ok {
		return governor.AuditedWrite{}, false
	}
	return auditedWrite(key, w), true
}

func (a Audit) key(u *unstructured.Unstructured) (audit.ObjectKey, bool) {
	gvk := u.GroupVersionKind()
	m, err := a.Mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
	if err != nil {
		return audit.ObjectKey{}, false
	}
	return audit.ObjectKey{APIGroup: gvk.Group, Resource: m.Resource.Resource, Namespace: u.GetNamespace(), Name: u.GetName()}, true
}

// isKustomizeController reports whether a write came from Flux's
// kustomize-controller: its ServiceAccount (kustomize-controller, in
// whatever namespace Flux is installed) wrote, or impersonated the
// Kustomization's ServiceAccount to write. Identities, not the user agent:
// any client can send "kustomize-controller/v1.9.6" and pass for Flux.
func isKustomizeController(w audit.Write) bool {
	return isKustomizeControllerAccount(w.User) || isKustomizeControllerAccount(w.Impersonator)
}

func isKustomizeControllerAccount(user string) bool {
	return isControllerAccount(user, "kustomize-controller")
}

// isHelmController reports whether a write came from Flux's
// helm-controller, as isKustomizeController does for kustomize-controller:
// its ServiceAccount, or a HelmRelease's that it impersonated.
func isHelmController(w audit.Write) bool {
	return isControllerAccount(w.User, "helm-controller") || isControllerAccount(w.Impersonator, "helm-controller")
}

func isControllerAccount(user, controller string) bool {
	return strings.HasPrefix(user, "system:serviceaccount:") && strings.HasSuffix(user, ":"+controller)
}

// SecretWrites calls fn with each write of a Secret the audit log
// receives, as the engine sees it: under --secrets=metadata reflux reads
// no Secret, and the audit log is all it knows of their drift.
func SecretWrites(store *audit.Store, fn func(governor.AuditedWrite)) {
	store.Notify(func(key audit.ObjectKey, w audit.Write) {
		if key.APIGroup != "" || key.Resource != "secrets" {
			return
		}
		fn(auditedWrite(key, w))
	})
}

// auditedWrite is the engine's view of an audited write. The manager is
// the request's fieldManager or, as the apiserver defaults it, the
// product of the user agent ("kubectl/v1.35.0 (linux/amd64)" is kubectl),
// so that --allowed-field-managers apply as they do to managedFields.
func auditedWrite(key audit.ObjectKey, w audit.Write) governor.AuditedWrite {
	manager := w.FieldManager
	if manager == "" {
		manager, _, _ = strings.Cut(w.UserAgent, "/")
	}
	return governor.AuditedWrite{
		Namespace: key.Namespace, Name: key.Name, Verb: w.Verb, Manager: manager,
		User: w.User, Groups: append([]string(nil), w.Groups...), Flux: isKustomizeController(w), Time: w.Time,
	}
}
