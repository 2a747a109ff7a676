package policy

import (
	"errors"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
)

func TestCheckCluster(t *testing.T) {
	tests := []struct {
		name      string
		ref       *meta.KubeConfigReference
		wantField string
		wantWhere string
	}{
		{name: "no kubeConfig: the cluster reflux runs in"},
		// reverse/fleet reaches it.
		{name: "a kubeconfig Secret", ref: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "spoke", Key: "value"}}},
		{name: "a workload-identity ConfigMap", ref: &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "spoke-aks"}}},
		// Admission refuses it, but kustomize-controller would still take
		// it for remote: so does reflux.
		{name: "an empty kubeConfig", ref: &meta.KubeConfigReference{},
			wantField: "spec.kubeConfig", wantWhere: "(spec.kubeConfig)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ks := &kustomizev1.Kustomization{}
			ks.Spec.KubeConfig = tt.ref
			err := CheckCluster(ks)
			if tt.wantField == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var remote *RemoteClusterError
			g.Expect(errors.As(err, &remote)).To(BeTrue())
			g.Expect(remote.Field).To(Equal(tt.wantField))
			g.Expect(err.Error()).To(And(
				HavePrefix("Flux applies this Kustomization to a remote cluster "+tt.wantWhere+","),
				ContainSubstring("nothing of it is watched, held or recorded"),
				ContainSubstring("through a kubeconfig Secret (spec.kubeConfig.secretRef) or a workload identity ConfigMap"),
				HaveSuffix("name either, or remove the reflux.dev/reverse-sync annotation to opt it out")))
		})
	}
}
