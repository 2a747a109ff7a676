package testenv_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestKubernetesIsThePinnedVersion: the apiserver the environment started
// reports the minor hack/testbin/versions.env pins, or the one
// $REFLUX_TESTENV_KUBE_VERSION names for another build.
func TestKubernetesIsThePinnedVersion(t *testing.T) {
	g := NewWithT(t)
	t.Logf("test environment: %s", env.Kubernetes)
	want := os.Getenv(testenv.KubeVersionEnv)
	if want == "" {
		b, err := os.ReadFile(filepath.Join("..", "..", "hack", "testbin", "versions.env"))
		g.Expect(err).NotTo(HaveOccurred())
		m := regexp.MustCompile(`(?m)^KUBERNETES_VERSION=(v\S+)$`).FindSubmatch(b)
		g.Expect(m).NotTo(BeNil(), "KUBERNETES_VERSION in versions.env")
		want = string(m[1])
	}
	g.Expect(strings.TrimPrefix(want, "v")).To(HavePrefix(env.Kubernetes.Minor() + "."))
	g.Expect(env.Kubernetes.APIServerPath).To(BeAnExistingFile())
	g.Expect(env.Kubernetes.EtcdPath).To(BeAnExistingFile())
}
