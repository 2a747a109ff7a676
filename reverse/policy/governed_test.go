package policy

import (
	"context"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func governedReader(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := refluxv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kustomizev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func ks(ns, name string, labels map[string]string, optIn bool) *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	if optIn {
		k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
	}
	return k
}

func selecting(ns, name string, labels map[string]string) *refluxv1.ReverseSyncPolicy {
	p := &refluxv1.ReverseSyncPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	p.Spec.KustomizationSelector = metav1.LabelSelector{MatchLabels: labels}
	return p
}

// TestGoverned: a policy governs the Kustomizations of its namespace that
// its selector selects and that opted in; the annotation alone is not
// enough, and neither is the selector. One Flux applies to a remote
// cluster through a kubeconfig Secret or a workload-identity ConfigMap is
// governed; one whose kubeConfig names neither, which reflux cannot
// follow, is not (issue 24).
func TestGoverned(t *testing.T) {
	g := NewWithT(t)
	web := map[string]string{"team": "web"}
	remote := ks("apps", "spoke", web, true)
	remote.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "spoke-kubeconfig"}}
	cloud := ks("apps", "cloud", web, true)
	cloud.Spec.KubeConfig = &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "spoke-aks"}}
	nowhere := ks("apps", "nowhere", web, true)
	nowhere.Spec.KubeConfig = &meta.KubeConfigReference{}
	c := governedReader(t,
		ks("apps", "shop", web, true), ks("apps", "blog", web, false), ks("apps", "db", map[string]string{"team": "db"}, true),
		ks("other", "shop", web, true), remote, cloud, nowhere)
	got, err := Governed(context.Background(), c, selecting("apps", "web", web))
	g.Expect(err).NotTo(HaveOccurred())
	names := []string{}
	for _, k := range got {
		g.Expect(k.Namespace).To(Equal("apps"))
		names = append(names, k.Name)
	}
	g.Expect(names).To(ConsistOf("shop", "spoke", "cloud"))

	bad := selecting("apps", "bad", nil)
	bad.Spec.KustomizationSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Sometimes"}}
	_, err = Governed(context.Background(), c, bad)
	g.Expect(err).To(MatchError(ContainSubstring("parsing kustomizationSelector")))
}

// TestGoverning: the first policy by name that selects an opted-in
// Kustomization governs it; a malformed selector is skipped (the policy
// reconciler reports it), and without the opt-in no policy governs.
func TestGoverning(t *testing.T) {
	g := NewWithT(t)
	web := map[string]string{"team": "web"}
	malformed := selecting("apps", "a-malformed", nil)
	malformed.Spec.KustomizationSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Sometimes"}}
	c := governedReader(t, selecting("apps", "z-web", web), selecting("apps", "m-web", web), malformed,
		selecting("apps", "b-db", map[string]string{"team": "db"}), selecting("other", "a-web", web))

	p, err := Governing(context.Background(), c, ks("apps", "shop", web, true))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).NotTo(BeNil())
	g.Expect(p.Name).To(Equal("m-web"), "the first by name of those that select it")

	p, err = Governing(context.Background(), c, ks("apps", "shop", web, false))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(BeNil(), "no opt-in, no policy")

	p, err = Governing(context.Background(), c, ks("apps", "cache", map[string]string{"team": "cache"}, true))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(BeNil(), "the opt-in alone never makes reflux act")
}
