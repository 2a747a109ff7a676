package record

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

var (
	ks  = refluxv1.KustomizationRef{Namespace: "flux-system", Name: "apps"}
	obj = refluxv1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "frontend"}
)

func TestName(t *testing.T) {
	g := NewWithT(t)
	n := Name(ks, obj)
	g.Expect(n).To(HavePrefix("deployment-frontend-"))
	g.Expect(Name(ks, obj)).To(Equal(n), "deterministic")
	other := obj
	other.Namespace = "web2"
	g.Expect(Name(ks, other)).ToNot(Equal(n), "objects in other namespaces get other records")

	long := obj
	long.Name = strings.Repeat("very-long-name.", 30)
	for _, o := range []refluxv1.ObjectRef{obj, long, {Kind: "_", Name: "___"}, {Kind: "ConfigMap", Name: "UPPER_case"}} {
		name := Name(ks, o)
		g.Expect(validation.IsDNS1123Subdomain(name)).To(BeEmpty(), name)
		g.Expect(len(name)).To(BeNumerically("<=", 63))
	}
}

func field(ptr string, ct refluxv1.ChangeType, action refluxv1.Action, sev refluxv1.Severity, modified time.Time, manager string) refluxv1.DriftField {
	t := metav1.NewTime(modified)
	return refluxv1.DriftField{Pointer: ptr, ChangeType: ct, Action: action, Severity: sev,
		Modifier: &refluxv1.Modifier{Manager: manager, Time: &t}}
}

func TestMergeKeepsFirstSeen(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	first := Merge(nil, Observation{
		Kustomization: ks, Policy: "apps", Object: obj, Revision: "main@sha1:aaa", Now: t0,
		Fields: []refluxv1.DriftField{
			field("/spec/replicas", refluxv1.ChangeUpdate, refluxv1.AlertAction, refluxv1.SeverityLow, t0, "kubectl-edit"),
		},
	})
	g.Expect(first.Name).To(Equal(Name(ks, obj)))
	g.Expect(first.Namespace).To(Equal("flux-system"))
	g.Expect(first.Labels).To(HaveKeyWithValue(KustomizationNameLabel, "apps"))
	g.Expect(first.Spec.FirstSeen.Time).To(Equal(t0))
	g.Expect(first.Spec.Fields[0].FirstSeen.Time).To(Equal(t0))

	t1 := t0.Add(5 * time.Minute)
	second := Merge(first, Observation{
		Kustomization: ks, Policy: "apps", Object: obj, Revision: "main@sha1:aaa", Now: t1,
		Fields: []refluxv1.DriftField{
			field("/spec/template/spec/containers/0/image", refluxv1.ChangeUpdate, refluxv1.AlertAction, refluxv1.SeverityHigh, t1, "kubectl-set"),
			field("/spec/replicas", refluxv1.ChangeUpdate, refluxv1.AlertAction, refluxv1.SeverityLow, t0, "kubectl-edit"),
		},
	})
	g.Expect(second.Spec.FirstSeen.Time).To(Equal(t0), "record first seen survives")
	g.Expect(second.Spec.LastSeen.Time).To(Equal(t1))
	g.Expect(second.Spec.Fields).To(HaveLen(2))
	g.Expect(second.Spec.Fields[0].Pointer).To(Equal("/spec/replicas"), "fields are sorted")
	g.Expect(second.Spec.Fields[0].FirstSeen.Time).To(Equal(t0), "field first seen survives")
	g.Expect(second.Spec.Fields[1].FirstSeen.Time).To(Equal(t1))
	g.Expect(second.Spec.LastModifier.Manager).To(Equal("kubectl-set"))
	g.Expect(first.Spec.Fields).To(HaveLen(1), "Merge does not mutate its input")

	action, sev := Summary(second.Spec.Fields)
	g.Expect(action).To(Equal(refluxv1.AlertAction))
	g.Expect(sev).To(Equal(refluxv1.SeverityHigh))
	g.Expect(EarliestFirstSeen(second)).To(Equal(t0))

	// A field that stopped diverging and came back is a new divergence.
	third := Merge(Merge(second, Observation{Kustomization: ks, Object: obj, Now: t1}), Observation{
		Kustomization: ks, Object: obj, Now: t1.Add(time.Minute),
		Fields: []refluxv1.DriftField{field("/spec/replicas", refluxv1.ChangeUpdate, refluxv1.AlertAction, refluxv1.SeverityLow, t1, "kubectl-edit")},
	})
	g.Expect(third.Spec.Fields[0].FirstSeen.Time).To(Equal(t1.Add(time.Minute)))
}

func TestIsOpen(t *testing.T) {
	g := NewWithT(t)
	d := &refluxv1.Drift{}
	g.Expect(IsOpen(d)).To(BeTrue())
	d.Status.State = refluxv1.DriftHeld
	g.Expect(IsOpen(d)).To(BeTrue())
	d.Annotations = map[string]string{refluxv1.DismissAnnotation: "true"}
	g.Expect(IsOpen(d)).To(BeFalse())
	d.Annotations = nil
	for _, s := range []refluxv1.DriftState{refluxv1.DriftResolved, refluxv1.DriftDismissed, refluxv1.DriftExpired} {
		d.Status.State = s
		g.Expect(IsOpen(d)).To(BeFalse())
	}
}

// TestMergeKeepsWhoRemovedAField: a removal's writer comes from the audit
// log when it is first seen; a later look, which can only find later
// writes to the object, does not replace it. Other fields follow their
// managedFields entries.
func TestMergeKeepsWhoRemovedAField(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	removed := func(user string) refluxv1.DriftField {
		f := field("/data/GONE", refluxv1.ChangeRemove, refluxv1.AlertAction, refluxv1.SeverityMedium, t0, "kubectl-patch")
		f.Modifier.User = user
		return f
	}
	updated := func(user string) refluxv1.DriftField {
		f := field("/data/KEPT", refluxv1.ChangeUpdate, refluxv1.AlertAction, refluxv1.SeverityMedium, t0, "kubectl-edit")
		f.Modifier.User = user
		return f
	}
	first := Merge(nil, Observation{Kustomization: ks, Object: obj, Fields: []refluxv1.DriftField{removed("bob"), updated("alice")}, Now: t0})
	later := Merge(first, Observation{Kustomization: ks, Object: obj, Fields: []refluxv1.DriftField{removed("carol"), updated("carol")}, Now: t0.Add(time.Minute)})
	g.Expect(later.Spec.Fields[0].Pointer).To(Equal("/data/GONE"))
	g.Expect(later.Spec.Fields[0].Modifier.User).To(Equal("bob"), "the removal keeps its first-seen writer")
	g.Expect(later.Spec.Fields[1].Modifier.User).To(Equal("carol"), "managedFields name the latest writer of a field")

	unknown := removed("")
	unknown.Modifier = nil
	noUser := Merge(nil, Observation{Kustomization: ks, Object: obj, Fields: []refluxv1.DriftField{unknown}, Now: t0})
	named := Merge(noUser, Observation{Kustomization: ks, Object: obj, Fields: []refluxv1.DriftField{removed("bob")}, Now: t0.Add(time.Second)})
	g.Expect(named.Spec.Fields[0].Modifier.User).To(Equal("bob"), "a writer the audit log delivers late is taken")
}

// TestMergeBoundsFields (issue 22 §2): a live change of 10,000 fields
// makes a record the apiserver accepts, with the most severe fields and a
// count of the rest, not a record refused whole.
func TestMergeBoundsFields(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var fields []refluxv1.DriftField
	for i := 0; i < 10_000; i++ {
		sev := refluxv1.SeverityLow
		if i == 9_999 {
			sev = refluxv1.SeverityCritical
		}
		fields = append(fields, field(fmt.Sprintf("/data/k%05d", i), refluxv1.ChangeAdd, refluxv1.MergeAction, sev, t0, "kubectl-edit"))
	}
	rec := Merge(nil, Observation{Kustomization: ks, Policy: "apps", Object: obj, Now: t0, Fields: fields})
	g.Expect(rec.Spec.Fields).To(HaveLen(MaxFields))
	g.Expect(rec.Spec.OmittedFields).To(Equal(int32(10_000 - MaxFields)))
	g.Expect(rec.Spec.Fields).To(ContainElement(HaveField("Pointer", "/data/k09999")), "the critical field is kept")
	g.Expect(rec.Spec.Fields[0].Pointer).To(Equal("/data/k00000"), "then the first by pointer")
	g.Expect(rec.Spec.Fields[MaxFields-2].Pointer).To(Equal("/data/k00254"))
	for i := 1; i < len(rec.Spec.Fields); i++ {
		g.Expect(rec.Spec.Fields[i-1].Pointer < rec.Spec.Fields[i].Pointer).To(BeTrue(), "by pointer")
	}

	// Once the change shrinks under the bound, nothing is omitted.
	again := Merge(rec, Observation{Kustomization: ks, Policy: "apps", Object: obj, Now: t0, Fields: fields[:3]})
	g.Expect(again.Spec.Fields).To(HaveLen(3))
	g.Expect(again.Spec.OmittedFields).To(BeZero())
}
