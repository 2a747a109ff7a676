package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reflux-dev/reflux/kustomize"
)

// Names of the binaries the environment runs, as linked into bin/ by
// hack/testbin/build.sh.
const (
	binEtcd          = "etcd"
	binKubeAPIServer = "kube-apiserver"
	// binKubeControllerManager runs only the clusterrole-aggregation
	// controller (startAggregation).
	binKubeControllerManager = "kube-controller-manager"
	binSourceController      = "source-controller"
	binKustomizeController   = "kustomize-controller"
	binHelmController        = "helm-controller"
)

// FluxDirEnv names the environment variable that points every environment
// at another build of the Flux controllers (and their CRDs) than bin/'s,
// such as bin/flux-latest from `make test-flux-latest`. etcd and
// kube-apiserver still come from Options.BinDir.
const FluxDirEnv = "REFLUX_TESTENV_FLUX_DIR"

// FluxVersionEnv names the environment variable that gives the version
// of the kustomize-controller in FluxDirEnv's directory, such as
// FLUX_LATEST_KUSTOMIZE_CONTROLLER_VERSION for `make test-flux-latest`.
const FluxVersionEnv = "REFLUX_TESTENV_FLUX_VERSION"

// FluxVersion is the version of the kustomize-controller the environment
// runs: what reflux must be told (--kustomize-controller-version) to
// render as it does.
func FluxVersion() string {
	if v := os.Getenv(FluxVersionEnv); v != "" {
		return v
	}
	return kustomize.PairedFluxVersion
}

// KubeDirEnv names the environment variable that points every environment
// at another build of etcd, kube-apiserver and kube-controller-manager than
// bin/'s, such as bin/kube-1.35 from `make test-kube-matrix`. The Flux
// controllers and kubectl still come from their own directories.
const KubeDirEnv = "REFLUX_TESTENV_KUBE_DIR"

// overrideDir picks the directory of a set of binaries, the Flux
// controllers or the control plane: the caller's option first, then the
// environment variable, then the bin directory. A relative variable is
// resolved against the repository root, because each test package runs in
// its own directory.
func overrideDir(option, env, root, binDir string) string {
	switch {
	case option != "":
		return option
	case env == "":
		return binDir
	case filepath.IsAbs(env):
		return env
	default:
		return filepath.Join(root, env)
	}
}

// helmBinDir picks the directory of helm-controller and its CRDs: the
// Flux directory when it holds them, else the bin directory. Only the
// pinned helm-controller can be built here (from ../shared/third_party, by
// `make testbin`), so bin/flux-latest has none, and its suites run the
// pinned one beside the newest source-controller.
func helmBinDir(fluxDir, binDir string) string {
	if _, err := binaryPath(fluxDir, binHelmController); err == nil {
		return fluxDir
	}
	return binDir
}

// ErrMissingBinary is returned when a binary the environment needs is not in
// the bin directory.
var ErrMissingBinary = errors.New("test binary missing: run `make testbin`")

// findRepoRoot walks up from dir until it finds a go.mod, so tests in any
// package resolve the same bin/ directory.
func findRepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving %q: %w", dir, err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// binaryPath returns the path of name in binDir, or ErrMissingBinary.
func binaryPath(binDir, name string) (string, error) {
	p := filepath.Join(binDir, name)
	info, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s not found in %s: %w", name, binDir, ErrMissingBinary)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s in %s is not executable: %w", name, binDir, ErrMissingBinary)
	}
	return p, nil
}

// crdDirectories returns the CRD directories to install. The CRDs of
// source-controller and kustomize-controller are required, and
// helm-controller's when helmDir is set; reflux's own are loaded when own
// is set and they are generated, and skipped while the directory is
// absent or empty so the environment is usable before controller-gen has
// run.
func crdDirectories(root, fluxDir, helmDir string, extra []string, own bool) ([]string, error) {
	dirs := []string{
		filepath.Join(fluxDir, binSourceController+"-crd"),
		filepath.Join(fluxDir, binKustomizeController+"-crd"),
	}
	if helmDir != "" {
		dirs = append(dirs, filepath.Join(helmDir, binHelmController+"-crd"))
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			return nil, fmt.Errorf("the CRDs of Flux are not at %s: %w", d, ErrMissingBinary)
		}
	}
	bases := filepath.Join(root, "config", "crd", "bases")
	if entries, err := os.ReadDir(bases); own && err == nil && len(entries) > 0 {
		dirs = append(dirs, bases)
	}
	return append(dirs, extra...), nil
}
