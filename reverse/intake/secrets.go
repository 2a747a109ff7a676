package intake

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/desired"
)

// SecretGVK is the kind whose drift --secrets=metadata reports from the
// audit log instead of a watch.
var SecretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// OnAuditedSecretWrite takes a write to a Secret from the audit webhook.
// It runs on the webhook's request goroutine, so like the live handlers it
// only queues. The audit log does not carry Flux's owner labels, so the
// owner is the governed Kustomization whose current render declares the
// Secret. While some render is not current, a write no current render
// declares waits (unowned) until one becomes current: it may be that
// one's, and a live change is never dropped.
func (in *Intake) OnAuditedSecretWrite(w reverse.AuditedWrite) {
	if w.Flux || in.opts.Writers.Allowed(w.Manager) {
		// Flux applying, or a writer whose changes are never drift.
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.routeSecretLocked(unownedWrite{write: w, seen: in.now()})
}

// unownedWrite is an audited Secret write waiting for its owner's render.
type unownedWrite struct {
	write reverse.AuditedWrite
	seen  time.Time
}

// routeSecretLocked queues an audited write for its owner, keeps it while
// a render that may declare it is not current, or lets it go: no governed
// Kustomization declares the Secret.
func (in *Intake) routeSecretLocked(u unownedWrite) {
	w := u.write
	k := Key{GVK: SecretGVK, Namespace: w.Namespace, Name: w.Name}
	owner, declared, waiting := in.secretOwnerLocked(desired.ObjectKey{Kind: SecretGVK.Kind, Namespace: w.Namespace, Name: w.Name})
	switch {
	case declared:
		obj := refluxv1.ObjectRef{APIVersion: "v1", Kind: SecretGVK.Kind, Namespace: w.Namespace, Name: w.Name}
		in.pending[k] = Change{Owner: owner, Object: obj, Seen: u.seen, Audited: &w}.merge(in.pending[k])
		in.live.Add(k)
	case waiting:
		// One per Secret: the first sighting, and the latest write.
		if earlier, ok := in.unowned[k]; ok && earlier.seen.Before(u.seen) {
			u.seen = earlier.seen
		}
		in.unowned[k] = u
	}
}

// rerouteSecretsLocked routes the waiting audited writes again, once a
// render became current.
func (in *Intake) rerouteSecretsLocked() {
	waiting := in.unowned
	in.unowned = map[Key]unownedWrite{}
	for _, u := range waiting {
		in.routeSecretLocked(u)
	}
}

// secretOwnerLocked returns the governed Kustomization whose current
// render declares the Secret (the first by name, should two), and whether
// some render is not current and might.
func (in *Intake) secretOwnerLocked(k desired.ObjectKey) (owner types.NamespacedName, declared, waiting bool) {
	var owners []types.NamespacedName
	for id, e := range in.entries {
		if !reverse.IsCurrent(e.gov, e.render) {
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
