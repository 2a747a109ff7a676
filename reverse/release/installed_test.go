package release

import (
	"context"
	"errors"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDesiredIsWhatHelmInstalled reads a release helm-controller
// installed through Helm's storage, and checks Desired against the
// cluster: every object is where Desired places it (the ClusterRole with
// no namespace, the rest in the release namespace), helm-controller
// applied it, and with nothing edited, no object drifts.
func TestDesiredIsWhatHelmInstalled(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	r := install(t, "installed", helmv2.DriftDetection{Mode: helmv2.DriftDetectionWarn})

	ref, err := Latest(r.refresh(g))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref).To(Equal(Ref{Name: "installed", Namespace: "installed", Version: 1, StorageNamespace: "installed"}))
	rls, err := Load(ctx, r.env.Client, ref)
	g.Expect(err).NotTo(HaveOccurred())
	desired, err := Desired(rls, r.env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(desired)).To(ConsistOf("Secret/installed-credentials", "ConfigMap/installed-settings",
		"ConfigMap/installed-unwatched", "ClusterRole/installed-reader", "Deployment/installed"))
	for _, obj := range desired {
		want := "installed"
		if obj.GetKind() == "ClusterRole" {
			want = ""
		}
		g.Expect(obj.GetNamespace()).To(Equal(want), obj.GetName())
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		g.Expect(r.env.Client.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
		g.Expect(managers(live)).To(ContainElement("helm-controller/Apply"), obj.GetName())
	}

	d, err := New(r.env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := d.DetectAll(ctx, r.hr, desired)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(identities(got)).To(BeEmpty(), "a fresh install has not drifted")
	g.Expect(got.Message()).To(BeEmpty())
	r.reconcile(g)
	g.Expect(r.drifted(g)).To(Equal(noDrift), "nor does helm-controller find any")

	_, err = Load(ctx, r.env.Client, Ref{Name: ref.Name, Namespace: ref.Namespace, Version: 2, StorageNamespace: ref.StorageNamespace})
	g.Expect(errors.Is(err, ErrReleaseNotFound)).To(BeTrue(), "%v", err)
}

func managers(obj client.Object) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	return out
}
