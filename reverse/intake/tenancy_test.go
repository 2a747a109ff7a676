package intake

import (
	"errors"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/reverse"
)

func TestDenyKeepsTheChangeWithoutAHold(t *testing.T) {
	g := NewWithT(t)
	tenant := "system:serviceaccount:flux-system:tenant"
	owner := types.NamespacedName{Namespace: "flux-system", Name: "podinfo"}
	k := Key{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "team-b", Name: "shared"}
	refused := fmt.Errorf("holding ConfigMap/shared team-b: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "shared",
		errors.New(`User "`+tenant+`" cannot patch resource "configmaps" in API group "" in the namespace "team-b"`)))
	var notified []types.NamespacedName
	in := newTestIntake(t, time.Now())
	in.opts.Notify = func(id types.NamespacedName) { notified = append(notified, id) }
	e := in.govern(owner, nil)
	e.parked[k] = Change{Owner: owner, Held: true}

	// As itself, reflux's RBAC lists what it may touch: a refusal is a
	// grant missing, reported like the tenant's.
	own := fmt.Errorf("detecting drift of ConfigMap/shared team-b: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "shared",
		errors.New(`User "system:serviceaccount:reflux-system:reflux-controller" cannot patch resource "configmaps" in API group "" in the namespace "team-b"`)))
	g.Expect(in.Deny(owner, k, own)).To(BeTrue())
	denied := in.statusLocked(e).Denied
	g.Expect(denied).To(HaveLen(1))
	g.Expect(denied[0].Err.Self).To(BeTrue())
	g.Expect(denied[0].Err.User).To(Equal("system:serviceaccount:reflux-system:reflux-controller"))
	in.Allow(owner, k)
	g.Expect(in.Deny(owner, k, errors.New("connection refused"))).To(BeFalse(), "only a refusal is a denial")
	notified = nil
	e.parked[k] = Change{Owner: owner, Held: true}

	e.gov = governed(func(_ *kustomizev1.Kustomization, gd *reverse.Governed) { gd.Identity = tenant })
	g.Expect(in.Deny(owner, k, errors.New("connection refused"))).To(BeFalse(), "only a refusal is a denial")

	g.Expect(in.Deny(owner, k, refused)).To(BeTrue())
	g.Expect(in.Deny(owner, k, refused)).To(BeTrue())
	g.Expect(notified).To(HaveLen(1), "the reconciler hears of a new denial once")
	s := in.statusLocked(e)
	g.Expect(s.Denied).To(HaveLen(1))
	g.Expect(s.Denied[0].Object).To(Equal("ConfigMap/team-b/shared"))
	g.Expect(s.Denied[0].Err.Verb).To(Equal("patch"))
	g.Expect(s.Denied[0].Err.Self).To(BeFalse(), "the tenant's refusal")
	g.Expect(s.Held).To(BeZero(), "the refused hold is not counted as one")
	g.Expect(s.Parked).To(Equal(1), "the change stays kept")

	g.Expect(in.Deny(types.NamespacedName{Name: "gone"}, k, refused)).To(BeFalse(), "not governed")
	in.Allow(owner, k)
	g.Expect(in.statusLocked(e).Denied).To(BeEmpty())
	g.Expect(notified).To(HaveLen(2), "and of its end")
	in.Allow(owner, k)
	g.Expect(notified).To(HaveLen(2), "allowing what was never denied says nothing")
}
