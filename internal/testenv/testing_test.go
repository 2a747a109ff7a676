package testenv_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestNewWithoutFlux starts a second, control-plane-only environment the
// way a package's own test would, and lets New's cleanup stop it.
func TestNewWithoutFlux(t *testing.T) {
	g := NewWithT(t)
	e := testenv.New(t, testenv.WithoutFlux())
	g.Expect(e.SourceController).To(BeNil())
	g.Expect(e.KustomizeController).To(BeNil())
	g.Expect(e.LogPaths()).To(HaveLen(2), "etcd and kube-apiserver only")

	var nss corev1.NamespaceList
	g.Expect(e.Client.List(context.Background(), &nss)).To(Succeed())
	g.Expect(nss.Items).NotTo(BeEmpty())
	g.Expect(e.KubeconfigPath).To(BeARegularFile())
}

func TestStopTwice(t *testing.T) {
	g := NewWithT(t)
	e := testenv.New(t, testenv.WithoutFlux())
	g.Expect(e.Stop()).To(Succeed())
	g.Expect(e.Dir).NotTo(BeADirectory(), "Stop removes the environment's directory")
	g.Expect(e.Stop()).To(Succeed(), "and a second Stop, as New's cleanup does, is harmless")
}
