package evaluate

import (
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/desired"
)

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
			w := reverse.AuditedWrite{Namespace: "payments", Name: "payments-api", Verb: tt.verb, Manager: "kubectl-" + tt.verb,
				User: "alice@example.com", Groups: []string{"oncall"}, Time: t0}
			obs := AuditedSecret(classified(t), r, want, w, t0.Add(time.Second), t0.Add(2*time.Second))
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
func classified(t *testing.T) *reverse.Governed {
	t.Helper()
	ks := &kustomizev1.Kustomization{}
	ks.Name, ks.Namespace = "payments", "flux-system"
	g := &reverse.Governed{Kustomization: ks, Policy: &refluxv1.ReverseSyncPolicy{}}
	c, err := classify.New(&g.Policy.Spec)
	if err != nil {
		t.Fatal(err)
	}
	g.Classifier = c
	return g
}
