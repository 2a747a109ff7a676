package drift

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func TestResult(t *testing.T) {
	g := NewWithT(t)
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	early := &refluxv1.Modifier{Manager: "kubectl-edit", Operation: "Update", Time: &t0}
	late := &refluxv1.Modifier{Manager: "legacy-app", Operation: "Apply", Time: &t1}
	res := Result{Fields: []Field{
		{Pointer: "/data/a", ChangeType: refluxv1.ChangeUpdate, GitValue: `"1"`, LiveValue: `"2"`, FluxReverts: true, Modifier: late},
		{Pointer: "/data/b", ChangeType: refluxv1.ChangeRemove, GitValue: `"3"`, FluxReverts: true},
		{Pointer: "/data/c", ChangeType: refluxv1.ChangeAdd, LiveValue: `"4"`, Modifier: early},
	}}

	g.Expect(res.LastModifier()).To(Equal(late))
	g.Expect(Result{}.LastModifier()).To(BeNil())
	g.Expect(res.DriftFields()).To(Equal([]refluxv1.DriftField{
		{Pointer: "/data/a", ChangeType: refluxv1.ChangeUpdate, GitValue: `"1"`, LiveValue: `"2"`, FluxReverts: true, Modifier: late},
		{Pointer: "/data/b", ChangeType: refluxv1.ChangeRemove, GitValue: `"3"`, FluxReverts: true},
		{Pointer: "/data/c", ChangeType: refluxv1.ChangeAdd, LiveValue: `"4"`, Modifier: early},
	}))
}
