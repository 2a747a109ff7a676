package governor

import (
	"cmp"
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/record"
)

// secretGVK is the kind whose drift --secrets=metadata reports from the
// audit log instead of a watch.
var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// AuditedWrite is a write to a Secret as the audit log tells it: who, how
// and when, never what. Without the opt-in to read Secrets, that is all
// reflux knows of them: Kubernetes RBAC has no metadata-only read, since a
// list or watch returns the data too.
type AuditedWrite struct {
	Namespace, Name string
	// Verb is the audit event's: create, update, patch, apply or delete.
	Verb string
	// Manager is the request's field manager, or its user agent's product
	// when the client sent none (the apiserver's own default).
	Manager string
	// User and Groups are the authenticated (or impersonated) user.
	User   string
	Groups []string
	// Flux is true when kustomize-controller made the write.
	Flux bool
	// Time the apiserver completed the request.
	Time time.Time
}

// OnAuditedSecretWrite takes a write to a Secret from the audit webhook.
// It runs on the webhook's request goroutine, so like the live handlers it
// only queues. The audit log does not carry Flux's owner labels, so the
// owner is the governed Kustomization whose current render declares the
// Secret. While some render is not current, a write no current render
// declares waits (unowned) until one becomes current: it may be that
// one's, and a live change is never dropped.
func (gv *Governor) OnAuditedSecretWrite(w AuditedWrite) {
	if w.Flux || gv.opts.Detector.Allowed(w.Manager) {
		// Flux applying, or a writer whose changes are never drift.
		return
	}
	gv.mu.Lock()
	defer gv.mu.Unlock()
	gv.routeSecretLocked(unownedWrite{write: w, seen: gv.now()})
}

// unownedWrite is an audited Secret write waiting for its owner's render.
type unownedWrite struct {
	write AuditedWrite
	seen  time.Time
}

// routeSecretLocked queues an audited write for its owner, keeps it while
// a render that may declare it is not current, or lets it go: no governed
// Kustomization declares the Secret.
func (gv *Governor) routeSecretLocked(u unownedWrite) {
	w := u.write
	k := objKey{GVK: secretGVK, Namespace: w.Namespace, Name: w.Name}
	owner, declared, waiting := gv.secretOwnerLocked(desired.ObjectKey{Kind: secretGVK.Kind, Namespace: w.Namespace, Name: w.Name})
	switch {
	case declared:
		obj := refluxv1.ObjectRef{APIVersion: "v1", Kind: secretGVK.Kind, Namespace: w.Namespace, Name: w.Name}
		gv.pending[k] = change{owner: owner, obj: obj, seen: u.seen, audited: &w}.merge(gv.pending[k])
		gv.live.Add(k)
	case waiting:
		// One per Secret: the first sighting, and the latest write.
		if earlier, ok := gv.unowned[k]; ok && earlier.seen.Before(u.seen) {
			u.seen = earlier.seen
		}
		gv.unowned[k] = u
	}
}

// rerouteSecretsLocked routes the waiting audited writes again, once a
// render became current.
func (gv *Governor) rerouteSecretsLocked() {
	waiting := gv.unowned
	gv.unowned = map[objKey]unownedWrite{}
	for _, u := range waiting {
		gv.routeSecretLocked(u)
	}
}

// secretOwnerLocked returns the governed Kustomization whose current
// render declares the Secret (the first by name, should two), and whether
// some render is not current and might.
func (gv *Governor) secretOwnerLocked(k desired.ObjectKey) (owner types.NamespacedName, declared, waiting bool) {
	var owners []types.NamespacedName
	for id, e := range gv.entries {
		if !isCurrent(e.gov, e.render) {
			waiting = true
			continue
		}
		if _, ok := e.render.Objects[k]; ok {
			owners = append(owners, id)
		}
	}
	if len(owners) == 0 {
		return types.NamespacedName{}, false, waiting
	}
	slices.SortFunc(owners, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return owners[0], true, waiting
}

// auditedSecret decides for a Secret the audit log saw written. The record
// has one field, the whole object: changed (ChangeUpdate, content unknown)
// or deleted (ChangeRemove). There is no hold, because holding needs the
// patch verb, and a patch's response is the whole Secret; write-back
// refuses the field, because reflux never read what to write. It reports
// whether the change was kept for later.
func (gv *Governor) auditedSecret(ctx context.Context, k objKey, c change) (bool, error) {
	snap, governed, kept := gv.currentOrPark(k, c)
	if !governed || kept {
		return kept, nil
	}
	want, declared := snap.render.Object(desired.ObjectKey{Kind: k.GVK.Kind, Namespace: k.Namespace, Name: k.Name})
	if !declared {
		return false, nil // another Kustomization's, or not Flux's
	}
	obs := auditedSecretObservation(snap.gov, snap.render, want, *c.audited, c.seen, gv.now())
	ks := snap.gov.ref()
	name := record.Name(ks, c.obj)
	p := plan{name: name, namespace: ks.Namespace, obj: c.obj, ks: snap.gov.Kustomization, seen: c.seen, as: snap.gov.Identity}
	return false, gv.exec.withRecord(ctx, &p, func(rec *refluxv1.Drift) (decide.Decision, error) {
		// The Secret is taken to exist, unless deleted: only a deletion is
		// Decide's whole-object drift with nothing left.
		live := decide.Live{Exists: c.audited.Verb != "delete"}
		return decide.Decide(decide.Input{Name: name, Record: rec, Live: live, Evaluated: true,
			Observation: obs, Now: gv.now()}), nil
	})
}

// auditedSecretObservation is what the audit log says of a write to a
// declared Secret: the whole object changed or deleted, by whom and when.
func auditedSecretObservation(g *Governed, r *desired.Render, want *unstructured.Unstructured, w AuditedWrite,
	seen, now time.Time) record.Observation {
	at := metav1.NewTime(firstOf(w.Time, seen, now))
	f := refluxv1.DriftField{ChangeType: refluxv1.ChangeUpdate,
		Modifier: &refluxv1.Modifier{Manager: w.Manager, Operation: operation(w.Verb), User: w.User,
			Groups: slices.Clone(w.Groups), Time: &at}}
	if w.Verb == "delete" {
		f.ChangeType = refluxv1.ChangeRemove
	}
	return wholeObjectObservation(g, r, want, want, f, now)
}

// operation names an audited verb as managedFields name operations.
func operation(verb string) string {
	switch verb {
	case "apply":
		return "Apply"
	case "delete":
		return "Delete"
	}
	return "Update"
}
