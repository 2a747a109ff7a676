package tenancy

import (
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/acl"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheckSourceRef(t *testing.T) {
	tests := []struct {
		name      string
		refNS     string
		noCross   bool
		wantError string
	}{
		{name: "same namespace, implicit", noCross: true},
		{name: "same namespace, explicit", refNS: "team-a", noCross: true},
		{name: "another namespace, allowed without the flag", refNS: "flux-system"},
		{name: "another namespace, refused with the flag", refNS: "flux-system", noCross: true,
			wantError: "can't access 'GitRepository/flux-system/repo', cross-namespace references have been blocked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "apps"}}
			ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo", Namespace: tt.refNS}
			err := CheckSourceRef(ks, tt.noCross)
			if tt.wantError == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.wantError))
			g.Expect(acl.IsAccessDenied(err)).To(BeTrue(), "Flux's ACL error type, so callers report AccessDenied")
		})
	}
}
