package desired

import (
	"context"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize"
)

// TestRenderNamesFluxsVersion: a render stamps buildMetadata's managed-by
// label with the kustomize-controller it was told of, and says which, so
// write-back builds its edits the same way.
func TestRenderNamesFluxsVersion(t *testing.T) {
	g := NewWithT(t)
	r, err := render(context.Background(), kustomize.BuildOptions{Root: "../../kustomize/testdata/build-metadata",
		Kustomization: &kustomizev1.Kustomization{}, ManagedByVersion: "v1.10.1"}, "main@sha1:abc", kustomize.Build)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.FluxVersion).To(Equal("v1.10.1"))
	g.Expect(r.Objects).NotTo(BeEmpty())
	for k := range r.Objects {
		obj, ok := r.Object(k)
		g.Expect(ok).To(BeTrue())
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "kustomize-v1.10.1"), k.String())
	}
}
