package owed

import (
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func TestCommand(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Command(refluxv1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "checkout", Name: "api"})).
		To(Equal("kubectl -n checkout annotate deployment.apps/api kustomize.toolkit.fluxcd.io/reconcile- reflux.dev/held-by- reflux.dev/held-since-"))
	g.Expect(Command(refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "checkout", Name: "flags"})).
		To(Equal("kubectl -n checkout annotate configmap/flags kustomize.toolkit.fluxcd.io/reconcile- reflux.dev/held-by- reflux.dev/held-since-"))
}
