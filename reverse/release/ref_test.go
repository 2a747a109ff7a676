package release

import (
	"errors"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLatest(t *testing.T) {
	snap := func(version int) *helmv2.Snapshot {
		return &helmv2.Snapshot{Name: "web", Namespace: "apps", Version: version, Status: "deployed"}
	}
	hr := func(mutate func(*helmv2.HelmRelease)) *helmv2.HelmRelease {
		h := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "flux-system"}}
		mutate(h)
		return h
	}
	tests := []struct {
		name    string
		hr      *helmv2.HelmRelease
		want    Ref
		wantErr error
	}{
		{name: "no history", hr: hr(func(*helmv2.HelmRelease) {}), wantErr: ErrNoHistory},
		{name: "no HelmRelease", hr: nil, wantErr: ErrNoHistory},
		{name: "a snapshot without a name", wantErr: ErrNoHistory,
			hr: hr(func(h *helmv2.HelmRelease) { h.Status.History = helmv2.Snapshots{{Version: 1}} })},
		{name: "the highest version, stored in the HelmRelease's namespace",
			hr:   hr(func(h *helmv2.HelmRelease) { h.Status.History = helmv2.Snapshots{snap(2), snap(3), snap(1)} }),
			want: Ref{Name: "web", Namespace: "apps", Version: 3, StorageNamespace: "flux-system"}},
		{name: "spec.storageNamespace before helm-controller has stored anything",
			hr: hr(func(h *helmv2.HelmRelease) {
				h.Spec.StorageNamespace = "helm-storage"
				h.Status.History = helmv2.Snapshots{snap(1)}
			}),
			want: Ref{Name: "web", Namespace: "apps", Version: 1, StorageNamespace: "helm-storage"}},
		{name: "status.storageNamespace, where the release is, over a changed spec",
			hr: hr(func(h *helmv2.HelmRelease) {
				h.Spec.StorageNamespace = "new-storage"
				h.Status.StorageNamespace = "old-storage"
				h.Status.History = helmv2.Snapshots{snap(4)}
			}),
			want: Ref{Name: "web", Namespace: "apps", Version: 4, StorageNamespace: "old-storage"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var before helmv2.Snapshots
			if tt.hr != nil {
				before = tt.hr.Status.History.DeepCopy()
			}
			got, err := Latest(tt.hr)
			if tt.wantErr != nil {
				g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), "%v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(tt.hr.Status.History).To(Equal(before), "the caller's history is not reordered")
		})
	}
}

func TestRefString(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Ref{Name: "web", Namespace: "apps", Version: 7}.String()).To(Equal("apps/web.v7"))
	// The same as helm-controller's name for it in its messages.
	s := &helmv2.Snapshot{Name: "web", Namespace: "apps", Version: 7}
	g.Expect(Ref{Name: "web", Namespace: "apps", Version: 7}.String()).To(Equal(s.FullReleaseName()))
}
