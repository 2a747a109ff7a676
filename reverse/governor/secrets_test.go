package governor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// managers is the part of Detector routing consults: which writers are
// never drift. Detecting is not this test's business.
type managers []string

func (m managers) Detect(context.Context, drift.Input) (drift.Result, error) {
	return drift.Result{}, errors.New("not used")
}
func (m managers) Unchanged(drift.Input) bool { return false }
func (m managers) Allowed(manager string) bool {
	for _, a := range m {
		if a == manager {
			return true
		}
	}
	return false
}
func (m managers) Reverted(string) bool { return true }

func secretRender(names ...string) *desired.Render {
	r := &desired.Render{Revision: "main@sha1:1", Generation: 2, Objects: map[desired.ObjectKey]*unstructured.Unstructured{}}
	for _, n := range names {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Secret")
		u.SetNamespace("payments")
		u.SetName(n)
		r.Objects[desired.KeyOf(u)] = u
	}
	return r
}

func TestAuditedSecretWritesFindTheirOwner(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	payments := types.NamespacedName{Namespace: "flux-system", Name: "payments"}
	billing := types.NamespacedName{Namespace: "flux-system", Name: "billing"}
	alice := AuditedWrite{Namespace: "payments", Name: "payments-api", Verb: "patch", Manager: "kubectl-patch",
		User: "alice@example.com", Time: t0}
	tests := []struct {
		name          string
		write         AuditedWrite
		billingRender *desired.Render // payments' render declares payments-api
		wantOwner     types.NamespacedName
		wantWaiting   bool
	}{
		{name: "a person's patch goes to the Kustomization declaring the Secret", write: alice,
			billingRender: secretRender("billing-api"), wantOwner: payments},
		{name: "Flux's apply is not drift", write: func() AuditedWrite { w := alice; w.Flux = true; return w }(),
			billingRender: secretRender("billing-api")},
		{name: "an allowed writer is not drift", write: func() AuditedWrite { w := alice; w.Manager = "vault-agent"; return w }(),
			billingRender: secretRender("billing-api")},
		{name: "a Secret no Kustomization declares is let go",
			write:         func() AuditedWrite { w := alice; w.Name = "scratch"; return w }(),
			billingRender: secretRender("billing-api")},
		{name: "while a render is not current, an undeclared Secret waits",
			write:       func() AuditedWrite { w := alice; w.Name = "scratch"; return w }(),
			wantWaiting: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			gv := newRoutingGovernor(t, t0)
			gv.entries[payments] = &entry{gov: governed(nil), render: secretRender("payments-api"), parked: map[objKey]change{}}
			gv.entries[billing] = &entry{gov: governed(nil), render: tt.billingRender, parked: map[objKey]change{}}
			gv.OnAuditedSecretWrite(tt.write)

			wk := objKey{GVK: secretGVK, Namespace: "payments", Name: tt.write.Name}
			c, queued := gv.pending[wk]
			if tt.wantOwner == (types.NamespacedName{}) {
				g.Expect(queued).To(BeFalse(), "nothing queued")
			} else {
				g.Expect(queued).To(BeTrue())
				g.Expect(c.owner).To(Equal(tt.wantOwner))
				g.Expect(c.audited).NotTo(BeNil())
				g.Expect(c.audited.User).To(Equal("alice@example.com"))
				g.Expect(c.seen).To(Equal(t0.Add(time.Second)), "timed from reaching reflux")
				g.Expect(c.obj).To(Equal(refluxv1.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "payments", Name: "payments-api"}))
				g.Expect(gv.live.Len()).To(Equal(1))
			}
			_, waiting := gv.unowned[wk]
			g.Expect(waiting).To(Equal(tt.wantWaiting))
		})
	}
}

func TestAWaitingSecretWriteIsRoutedOnceTheRenderIsCurrent(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	gv := newRoutingGovernor(t, t0)
	g0 := governed(nil)
	billing := g0.Key()
	gv.entries[billing] = &entry{gov: g0, parked: map[objKey]change{}, clean: map[objKey]string{},
		outstanding: map[objKey]bool{}}
	w := AuditedWrite{Namespace: "payments", Name: "billing-api", Verb: "update", Manager: "kubectl-edit", User: "bob@example.com"}
	gv.OnAuditedSecretWrite(w)
	k := objKey{GVK: secretGVK, Namespace: "payments", Name: "billing-api"}
	g.Expect(gv.unowned).To(HaveKey(k))
	g.Expect(gv.pending).NotTo(HaveKey(k))

	gv.Publish(gv.entries[billing].gov, secretRender("billing-api"))
	g.Expect(gv.unowned).To(BeEmpty())
	g.Expect(gv.pending).To(HaveKey(k))
	g.Expect(gv.pending[k].owner).To(Equal(billing))
	g.Expect(gv.pending[k].seen).To(Equal(t0.Add(time.Second)), "the first sighting, not the routing")
}

func TestAuditedSecretObservation(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	r := secretRender("payments-api")
	want, _ := r.Object(desired.ObjectKey{Kind: "Secret", Namespace: "payments", Name: "payments-api"})
	tests := []struct {
		verb, operation string
		change          refluxv1.ChangeType
	}{
		{"patch", "Update", refluxv1.ChangeUpdate},
		{"update", "Update", refluxv1.ChangeUpdate},
		{"apply", "Apply", refluxv1.ChangeUpdate},
		{"delete", "Delete", refluxv1.ChangeRemove},
	}
	for _, tt := range tests {
		t.Run(tt.verb, func(t *testing.T) {
			g := NewWithT(t)
			w := AuditedWrite{Namespace: "payments", Name: "payments-api", Verb: tt.verb, Manager: "kubectl-" + tt.verb,
				User: "alice@example.com", Groups: []string{"oncall"}, Time: t0}
			obs := auditedSecretObservation(classified(t), r, want, w, t0.Add(time.Second), t0.Add(2*time.Second))
			g.Expect(obs.Fields).To(HaveLen(1))
			f := obs.Fields[0]
			g.Expect(f.Pointer).To(Equal(refluxv1.WholeObjectPointer))
			g.Expect(f.ChangeType).To(Equal(tt.change))
			g.Expect(f.ContentUnknown()).To(Equal(tt.verb != "delete"))
			g.Expect(f.DeletesObject()).To(Equal(tt.verb == "delete"))
			g.Expect(f.GitValue+f.LiveValue).To(BeEmpty(), "no value is ever known")
			g.Expect(f.Modifier.User).To(Equal("alice@example.com"))
			g.Expect(f.Modifier.Groups).To(Equal([]string{"oncall"}))
			g.Expect(f.Modifier.Operation).To(Equal(tt.operation))
			g.Expect(f.Modifier.Time.Time).To(Equal(t0), "the apiserver's time of the write")
			g.Expect(f.Action).To(Equal(refluxv1.AlertAction))
			g.Expect(f.Severity).To(Equal(refluxv1.SeverityHigh))
			g.Expect(obs.Revision).To(Equal("main@sha1:1"))
		})
	}
}

// classified is a governed Kustomization under a policy of the built-in
// defaults only.
func classified(t *testing.T) *Governed {
	t.Helper()
	g := governed(nil)
	c, err := classify.New(&g.Policy.Spec)
	if err != nil {
		t.Fatal(err)
	}
	g.Classifier = c
	return g
}

func newRoutingGovernor(t *testing.T, t0 time.Time) *Governor {
	t.Helper()
	live := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[objKey]())
	t.Cleanup(live.ShutDown)
	now := t0.Add(time.Second)
	return &Governor{
		opts: Options{Log: logr.Discard(), Detector: managers{"vault-agent"}, Now: func() time.Time { return now },
			Notify: func(types.NamespacedName) {}},
		live: live, resync: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[objKey]()),
		entries: map[types.NamespacedName]*entry{}, pending: map[objKey]change{}, inflight: map[objKey]change{},
		unowned: map[objKey]unownedWrite{}, resyncItems: map[objKey]change{},
	}
}

// A Secret reflux does not watch is never in the live store, so a resync
// of it finds it "gone": what the audit log said of it must survive that.
func TestForgetGoneKeepsAParkedAuditedChange(t *testing.T) {
	g := NewWithT(t)
	gv := newRoutingGovernor(t, time.Now())
	owner := types.NamespacedName{Namespace: "flux-system", Name: "payments"}
	secret := objKey{GVK: secretGVK, Namespace: "payments", Name: "payments-api"}
	cm := objKey{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "payments", Name: "flags"}
	e := &entry{gov: governed(nil), parked: map[objKey]change{
		secret: {owner: owner, audited: &AuditedWrite{Name: "payments-api", User: "alice@example.com"}},
		cm:     {owner: owner},
	}, clean: map[objKey]string{cm: "12"}}
	gv.entries[owner] = e
	g.Expect(gv.forgetGone(owner, secret)).To(BeIdenticalTo(e))
	g.Expect(gv.forgetGone(owner, cm)).To(BeIdenticalTo(e))
	g.Expect(e.parked).To(HaveKey(secret), "the audited change is kept")
	g.Expect(e.parked).NotTo(HaveKey(cm), "a gone object's change goes")
	g.Expect(e.clean).To(BeEmpty())
	g.Expect(gv.forgetGone(types.NamespacedName{Name: "other"}, cm)).To(BeNil())
}

// A change only the audit log saw is retried even when the failure is a
// refused permission: no live object carries it for the resync to find.
func TestFailedAuditedChangeIsRetriedEvenWhenDenied(t *testing.T) {
	g := NewWithT(t)
	gv := newRoutingGovernor(t, time.Now())
	owner := types.NamespacedName{Namespace: "flux-system", Name: "payments"}
	gv.entries[owner] = &entry{gov: governed(nil), parked: map[objKey]change{}}
	refused := apierrors.NewForbidden(schema.GroupResource{Group: "reflux.dev", Resource: "drifts"}, "rec",
		errors.New(`User "system:serviceaccount:reflux-system:reflux-controller" cannot create resource "drifts" in API group "reflux.dev" in the namespace "flux-system"`))
	secret := objKey{GVK: secretGVK, Namespace: "payments", Name: "payments-api"}
	cm := objKey{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "payments", Name: "flags"}

	gv.failed(secret, change{owner: owner, audited: &AuditedWrite{Name: "payments-api"}}, refused)
	gv.failed(cm, change{owner: owner}, refused)
	g.Expect(gv.pending).To(HaveKey(secret), "kept for the retry")
	g.Expect(gv.pending).NotTo(HaveKey(cm), "left on the live object for the resync")
	g.Expect(gv.statusLocked(gv.entries[owner]).Denied).To(HaveLen(2), "both denials are reported")
	g.Eventually(gv.live.Len).Should(Equal(1), "the audited change is queued again")
}
