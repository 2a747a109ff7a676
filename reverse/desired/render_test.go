package desired

import (
	"context"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
)

// TestRenderNamesFluxsVersion: a render stamps buildMetadata's managed-by
// label with the kustomize-controller it was told of, and says which, so
// write-back builds its edits the same way.
func TestRenderNamesFluxsVersion(t *testing.T) {
	g := NewWithT(t)
	r, err := render(context.Background(), "../../kustomize/testdata/build-metadata", &kustomizev1.Kustomization{},
		"main@sha1:abc", nil, "v1.10.1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.FluxVersion).To(Equal("v1.10.1"))
	g.Expect(r.Objects).NotTo(BeEmpty())
	for k := range r.Objects {
		obj, ok := r.Object(k)
		g.Expect(ok).To(BeTrue())
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "kustomize-v1.10.1"), k.String())
	}
}
