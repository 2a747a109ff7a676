package reverse

import (
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/desired"
)

func governed(mutate func(ks *kustomizev1.Kustomization, g *Governed)) *Governed {
	ks := &kustomizev1.Kustomization{}
	ks.Name, ks.Namespace, ks.Generation = "podinfo", "flux-system", 2
	ks.Status.ObservedGeneration = 2
	ks.Status.LastAppliedRevision = "main@sha1:1"
	ks.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue}}
	g := &Governed{Kustomization: ks, Policy: &refluxv1.ReverseSyncPolicy{}, SourceRevision: "main@sha1:1"}
	if mutate != nil {
		mutate(ks, g)
	}
	return g
}

func TestCurrent(t *testing.T) {
	applied := &desired.Render{Revision: "main@sha1:1", Generation: 2}
	tests := []struct {
		name             string
		g                *Governed
		render           *desired.Render
		rolling, current bool
	}{
		{"applied revision rendered", governed(nil), applied, false, true},
		{"no render yet", governed(nil), nil, false, false},
		{"render of an older revision", governed(nil), &desired.Render{Revision: "main@sha1:0", Generation: 2}, false, false},
		{"render of an older spec", governed(nil), &desired.Render{Revision: "main@sha1:1", Generation: 1}, false, false},
		{"a new spec Flux has not reconciled", governed(func(ks *kustomizev1.Kustomization, _ *Governed) { ks.Status.ObservedGeneration = 1 }), applied, true, false},
		{"the source serves a revision Flux is applying", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			g.SourceRevision = "main@sha1:2"
			ks.Status.Conditions[0].Status = metav1.ConditionUnknown
		}), applied, true, false},
		{"Flux failed the new revision: the applied one stands", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			g.SourceRevision = "main@sha1:2"
			ks.Status.Conditions[0].Status = metav1.ConditionFalse
		}), applied, false, true},
		{"suspended: Flux applies nothing new", governed(func(ks *kustomizev1.Kustomization, g *Governed) {
			g.SourceRevision, ks.Spec.Suspend = "main@sha1:2", true
		}), applied, false, true},
		{"source revision unknown", governed(func(_ *kustomizev1.Kustomization, g *Governed) { g.SourceRevision = "" }), applied, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(RollingOut(tt.g)).To(Equal(tt.rolling), "rolling out")
			g.Expect(IsCurrent(tt.g, tt.render)).To(Equal(tt.current), "current")
		})
	}
}
