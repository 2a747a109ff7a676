package owed

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func TestCommand(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Command(refluxv1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "checkout", Name: "api"})).
		To(Equal("kubectl -n checkout annotate deployment.apps/api kustomize.toolkit.fluxcd.io/reconcile- reflux.dev/held-by- reflux.dev/held-since-"))
	g.Expect(Command(refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "checkout", Name: "flags"})).
		To(Equal("kubectl -n checkout annotate configmap/flags kustomize.toolkit.fluxcd.io/reconcile- reflux.dev/held-by- reflux.dev/held-since-"))
}

// TestOwedListsWhatIsOwed: what a successor takes over is every release
// added and not done, each once.
func TestOwedListsWhatIsOwed(t *testing.T) {
	g := NewWithT(t)
	o, err := New(Options{Records: noReader{}, Holders: noHolders{}})
	g.Expect(err).NotTo(HaveOccurred())
	a := Release{Object: refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "a"}}
	b := Release{As: "system:serviceaccount:apps:deployer", Object: refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "b"}}
	o.Add(a)
	o.Add(b)
	o.Add(a)
	g.Expect(o.Owing()).To(Equal(2))
	g.Expect(o.Owed()).To(ConsistOf(a, b))
}

// noReader and noHolders satisfy New: no release is tried here.
type noReader struct{ client.Reader }
type noHolders struct{ Holders }
