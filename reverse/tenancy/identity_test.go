package tenancy

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIdentity(t *testing.T) {
	tests := []struct {
		name, spec, defaultSA, want string
	}{
		{name: "neither: reflux's own identity", want: ""},
		{name: "the spec's ServiceAccount, in the Kustomization's namespace", spec: "deployer",
			want: "system:serviceaccount:team-a:deployer"},
		{name: "the default when the spec names none", defaultSA: "tenant",
			want: "system:serviceaccount:team-a:tenant"},
		{name: "the spec wins over the default", spec: "deployer", defaultSA: "tenant",
			want: "system:serviceaccount:team-a:deployer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "apps"}}
			ks.Spec.ServiceAccountName = tt.spec
			NewWithT(t).Expect(Identity(ks, tt.defaultSA)).To(Equal(tt.want))
			// A HelmRelease's is decided alike, in its own namespace.
			hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
			hr.Spec.ServiceAccountName = tt.spec
			NewWithT(t).Expect(HelmIdentity(hr, tt.defaultSA)).To(Equal(tt.want))
		})
	}
}
