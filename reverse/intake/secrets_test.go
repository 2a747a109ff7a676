package intake

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/desired"
)

func TestAuditedSecretWritesFindTheirOwner(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	payments := types.NamespacedName{Namespace: "flux-system", Name: "payments"}
	billing := types.NamespacedName{Namespace: "flux-system", Name: "billing"}
	alice := reverse.AuditedWrite{Namespace: "payments", Name: "payments-api", Verb: "patch", Manager: "kubectl-patch",
		User: "alice@example.com", Time: t0}
	tests := []struct {
		name          string
		write         reverse.AuditedWrite
		billingRender *desired.Render // payments' render declares payments-api
		wantOwner     types.NamespacedName
		wantWaiting   bool
	}{
		{name: "a person's patch goes to the Kustomization declaring the Secret", write: alice,
			billingRender: secretRender("billing-api"), wantOwner: payments},
		{name: "Flux's apply is not drift", write: func() reverse.AuditedWrite { w := alice; w.Flux = true; return w }(),
			billingRender: secretRender("billing-api")},
		{name: "an allowed writer is not drift", write: func() reverse.AuditedWrite { w := alice; w.Manager = "vault-agent"; return w }(),
			billingRender: secretRender("billing-api")},
		{name: "a Secret no Kustomization declares is let go",
			write:         func() reverse.AuditedWrite { w := alice; w.Name = "scratch"; return w }(),
			billingRender: secretRender("billing-api")},
		{name: "while a render is not current, an undeclared Secret waits",
			write:       func() reverse.AuditedWrite { w := alice; w.Name = "scratch"; return w }(),
			wantWaiting: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := newTestIntake(t, t0)
			in.govern(payments, secretRender("payments-api"))
			in.govern(billing, tt.billingRender)
			in.OnAuditedSecretWrite(tt.write)

			wk := Key{GVK: SecretGVK, Namespace: "payments", Name: tt.write.Name}
			c, queued := in.pending[wk]
			if tt.wantOwner == (types.NamespacedName{}) {
				g.Expect(queued).To(BeFalse(), "nothing queued")
			} else {
				g.Expect(queued).To(BeTrue())
				g.Expect(c.Owner).To(Equal(tt.wantOwner))
				g.Expect(c.Audited).NotTo(BeNil())
				g.Expect(c.Audited.User).To(Equal("alice@example.com"))
				g.Expect(c.Seen).To(Equal(t0.Add(time.Second)), "timed from reaching reflux")
				g.Expect(c.Object).To(Equal(refluxv1.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "payments", Name: "payments-api"}))
				g.Expect(in.live.Len()).To(Equal(1))
			}
			_, waiting := in.unowned[wk]
			g.Expect(waiting).To(Equal(tt.wantWaiting))
		})
	}
}

func TestAWaitingSecretWriteIsRoutedOnceTheRenderIsCurrent(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	in := newTestIntake(t, t0)
	billing := types.NamespacedName{Namespace: "flux-system", Name: "billing"}
	e := in.govern(billing, nil)
	w := reverse.AuditedWrite{Namespace: "payments", Name: "billing-api", Verb: "update", Manager: "kubectl-edit", User: "bob@example.com"}
	in.OnAuditedSecretWrite(w)
	k := Key{GVK: SecretGVK, Namespace: "payments", Name: "billing-api"}
	g.Expect(in.unowned).To(HaveKey(k))
	g.Expect(in.pending).NotTo(HaveKey(k))

	in.Publish(e.gov, secretRender("billing-api"))
	g.Expect(in.unowned).To(BeEmpty())
	g.Expect(in.pending).To(HaveKey(k))
	g.Expect(in.pending[k].Owner).To(Equal(billing))
	g.Expect(in.pending[k].Seen).To(Equal(t0.Add(time.Second)), "the first sighting, not the routing")
}

// A Secret reflux does not watch is never in the live store, so a resync
// of it finds it "gone": what the audit log said of it must survive that.
func TestForgetGoneKeepsAParkedAuditedChange(t *testing.T) {
	g := NewWithT(t)
	in := newTestIntake(t, time.Now())
	owner := types.NamespacedName{Namespace: "flux-system", Name: "payments"}
	secret := Key{GVK: SecretGVK, Namespace: "payments", Name: "payments-api"}
	cm := Key{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "payments", Name: "flags"}
	e := in.govern(owner, nil)
	e.parked[secret] = Change{Owner: owner, Audited: &reverse.AuditedWrite{Name: "payments-api", User: "alice@example.com"}}
	e.parked[cm] = Change{Owner: owner}
	e.clean[cm] = "12"
	_, governed := in.ForgetGone(owner, secret)
	g.Expect(governed).To(BeTrue())
	_, governed = in.ForgetGone(owner, cm)
	g.Expect(governed).To(BeTrue())
	g.Expect(e.parked).To(HaveKey(secret), "the audited change is kept")
	g.Expect(e.parked).NotTo(HaveKey(cm), "a gone object's change goes")
	g.Expect(e.clean).To(BeEmpty())
	_, governed = in.ForgetGone(types.NamespacedName{Name: "other"}, cm)
	g.Expect(governed).To(BeFalse())
}

// A change a permission refused is kept and looked at again, slowly: a
// grant, or a restarted apiserver's authorizer catching up with its RBAC,
// brings the permission back with no event on the object. A change only
// the audit log saw exists nowhere else, so it is kept the same way.
func TestFailedDeniedChangeIsLookedAtAgain(t *testing.T) {
	g := NewWithT(t)
	in := newTestIntake(t, time.Now())
	owner := types.NamespacedName{Namespace: "flux-system", Name: "payments"}
	in.govern(owner, nil)
	refused := apierrors.NewForbidden(schema.GroupResource{Group: "reflux.dev", Resource: "drifts"}, "rec",
		errors.New(`User "system:serviceaccount:reflux-system:reflux-controller" cannot create resource "drifts" in API group "reflux.dev" in the namespace "flux-system"`))
	secret := Key{GVK: SecretGVK, Namespace: "payments", Name: "payments-api"}
	cm := Key{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "payments", Name: "flags"}

	in.failed(secret, Change{Owner: owner, Audited: &reverse.AuditedWrite{Name: "payments-api"}}, refused)
	in.failed(cm, Change{Owner: owner}, refused)
	g.Expect(in.pending).To(HaveKey(secret), "kept for the look again")
	g.Expect(in.pending).To(HaveKey(cm), "kept for the look again")
	g.Expect(in.statusLocked(in.entries[owner]).Denied).To(HaveLen(2), "both denials are reported")
	g.Expect(in.live.Len()).To(Equal(0), "not at once")
	g.Eventually(in.live.Len, 3*denyWaitBase, 100*time.Millisecond).Should(Equal(2), "both are queued again after the wait")
	// Refused again, the next wait is longer.
	g.Expect(in.denyWait.When(cm)).To(Equal(2 * denyWaitBase))
}
