package reverse

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func driftRecord(name, kind string, seen time.Time, fields ...refluxv1.DriftField) refluxv1.Drift {
	d := refluxv1.Drift{}
	d.Name = name
	d.Spec.Object = refluxv1.ObjectRef{APIVersion: "v1", Kind: kind, Namespace: "apps", Name: "web"}
	d.Spec.Fields = fields
	d.Spec.FirstSeen = metav1.NewTime(seen)
	return d
}

func field(ptr, live string, action refluxv1.Action) refluxv1.DriftField {
	return refluxv1.DriftField{Pointer: ptr, ChangeType: refluxv1.ChangeUpdate, LiveValue: live, Action: action}
}

func TestFingerprint(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	a := driftRecord("r1", "ConfigMap", now, field("/data/A", `"1"`, refluxv1.MergeAction), field("/data/B", `"2"`, refluxv1.MergeAction))
	b := driftRecord("r2", "Deployment", now, field("/spec/replicas", "3", refluxv1.AlertAction))
	fp := Fingerprint([]refluxv1.Drift{a, b})
	g.Expect(fp).To(HaveLen(12))

	// Order of records and fields, names and timestamps do not matter.
	a2 := driftRecord("other-name", "ConfigMap", now.Add(time.Hour), field("/data/B", `"2"`, refluxv1.MergeAction), field("/data/A", `"1"`, refluxv1.MergeAction))
	g.Expect(Fingerprint([]refluxv1.Drift{b, a2})).To(Equal(fp))

	// Ignored fields never reach Git, so they do not change the set.
	a3 := a
	a3.Spec.Fields = append(append([]refluxv1.DriftField{}, a.Spec.Fields...), field("/metadata/annotations/x", `"y"`, refluxv1.IgnoreAction))
	g.Expect(Fingerprint([]refluxv1.Drift{a3, b})).To(Equal(fp))

	// A different live value, action or object is a different set.
	g.Expect(Fingerprint([]refluxv1.Drift{driftRecord("r1", "ConfigMap", now, field("/data/A", `"9"`, refluxv1.MergeAction), field("/data/B", `"2"`, refluxv1.MergeAction)), b})).ToNot(Equal(fp))
	g.Expect(Fingerprint([]refluxv1.Drift{a, driftRecord("r2", "Deployment", now, field("/spec/replicas", "3", refluxv1.MergeAction))})).ToNot(Equal(fp))
	g.Expect(Fingerprint([]refluxv1.Drift{a, driftRecord("r2", "StatefulSet", now, field("/spec/replicas", "3", refluxv1.AlertAction))})).ToNot(Equal(fp))
	g.Expect(Fingerprint([]refluxv1.Drift{a})).ToNot(Equal(fp))
}
