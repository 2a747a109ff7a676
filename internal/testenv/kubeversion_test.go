package testenv

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/version"
)

func TestKubernetesCheck(t *testing.T) {
	k := Kubernetes{APIServerPath: "/cache/kube-apiserver-v1.35.8/kube-apiserver",
		Version: version.Info{Major: "1", Minor: "35", GitVersion: "v0.0.0-master+$Format:%H$"}}
	for _, tc := range []struct {
		name, want, err string
	}{
		{name: "no version asked for", want: ""},
		{name: "the same minor", want: "v1.35.8"},
		{name: "another patch of it", want: "1.35.2"},
		{name: "another minor", want: "v1.34.12", err: "reports 1.35, but $REFLUX_TESTENV_KUBE_VERSION is v1.34.12"},
		{name: "not a version", want: "v1", err: "is not a Kubernetes version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := k.check(tc.want)
			if tc.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
		})
	}
}

func TestKubernetesMinor(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Kubernetes{Version: version.Info{Major: "1", Minor: "34+"}}.Minor()).To(Equal("1.34"))
	g.Expect(Kubernetes{Version: version.Info{Major: "1", Minor: "36"}}.String()).To(HavePrefix("kube-apiserver 1.36 ("))
}
