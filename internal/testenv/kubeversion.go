package testenv

import (
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// KubeVersionEnv names the environment variable that gives the version of
// the kube-apiserver in KubeDirEnv's directory, such as KUBE_1_35_VERSION
// for `make test-kube-matrix`. Start refuses an apiserver that reports
// another minor, so a suite that passes has run against that version.
const KubeVersionEnv = "REFLUX_TESTENV_KUBE_VERSION"

// Kubernetes is the control plane an environment runs.
type Kubernetes struct {
	// APIServerPath and EtcdPath are the binaries, symlinks resolved: the
	// cache of hack/testbin names each directory by version.
	APIServerPath, EtcdPath string
	// Version is what kube-apiserver reports at /version. Builds from the
	// module proxy carry no version stamp (-X), so GitVersion reads
	// "v0.0.0-master+$Format:%H$"; Major and Minor come from the source's
	// own DefaultKubeBinaryVersion, and are the ones to trust.
	Version version.Info
}

// Minor returns the apiserver's major and minor version, such as "1.35".
func (k Kubernetes) Minor() string {
	// A build off a release branch reports a minor such as "35+".
	return k.Version.Major + "." + strings.TrimSuffix(k.Version.Minor, "+")
}

// String reports the apiserver's version and both binaries, for the
// test log: a run then shows which Kubernetes it ran against.
func (k Kubernetes) String() string {
	return fmt.Sprintf("kube-apiserver %s (%s), etcd %s", k.Minor(), k.APIServerPath, k.EtcdPath)
}

// check returns an error unless want, a version such as "v1.35.8", is
// empty or names the apiserver's minor.
func (k Kubernetes) check(want string) error {
	if want == "" {
		return nil
	}
	parts := strings.SplitN(strings.TrimPrefix(want, "v"), ".", 3)
	if len(parts) < 2 {
		return fmt.Errorf("$%s=%q is not a Kubernetes version such as v1.35.8", KubeVersionEnv, want)
	}
	if got := k.Minor(); got != parts[0]+"."+parts[1] {
		return fmt.Errorf("kube-apiserver %s reports %s, but $%s is %s", k.APIServerPath, got, KubeVersionEnv, want)
	}
	return nil
}

// describe asks the running apiserver for its version through cfg.
func (cp *controlPlane) describe(cfg *rest.Config) (Kubernetes, error) {
	k := Kubernetes{APIServerPath: resolved(cp.apiserverPath), EtcdPath: resolved(cp.etcdPath)}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return k, fmt.Errorf("creating discovery client: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return k, fmt.Errorf("reading kube-apiserver's version: %w", err)
	}
	k.Version = *v
	return k, nil
}

// resolved returns path with its symlinks resolved, or path itself when
// they cannot be: it is only reported.
func resolved(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return path
}
