package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// The users the Flux controllers authenticate as. They are named like the
// service accounts of a real flux-system installation so audit events and
// managedFields look the same as on a real cluster.
const (
	SourceControllerUser    = "system:serviceaccount:flux-system:source-controller"
	KustomizeControllerUser = "system:serviceaccount:flux-system:kustomize-controller"
)

// fluxGroups gives the controllers cluster-admin, as their ClusterRoleBinding
// does in a default Flux installation.
var fluxGroups = []string{"system:masters", "system:serviceaccounts", "system:serviceaccounts:flux-system"}

// startFlux starts source-controller and kustomize-controller against the
// control plane and waits until both report ready.
func startFlux(ctx context.Context, o *Options, cp *controlPlane, dir string) (*Process, *Process, error) {
	src, err := startController(o, cp, dir, binSourceController, SourceControllerUser,
		withArgs(sourceArgs, o.SourceControllerArgs))
	if err != nil {
		return nil, nil, err
	}
	kc, err := startController(o, cp, dir, binKustomizeController, KustomizeControllerUser,
		withArgs(kustomizeArgs, o.KustomizeControllerArgs))
	if err != nil {
		return nil, nil, joinStop(err, o, src)
	}
	for _, p := range []*Process{src, kc} {
		if err := p.waitReady(ctx, o.StartTimeout); err != nil {
			return nil, nil, joinStop(err, o, src, kc)
		}
	}
	return src, kc, nil
}

// extraArgs returns a controller's own flags, given its working directory
// and a loopback address reserved together with its metrics and health
// addresses: reserving them apart could hand one just-closed port out
// twice (seen in CI as source-controller's artifact server failing to
// bind its own metrics port).
type extraArgs func(dir, spareAddr string) ([]string, error)

// startController starts one Flux controller as user with the flags both
// controllers share plus extra's.
func startController(o *Options, cp *controlPlane, dir, name, user string, extra extraArgs) (*Process, error) {
	bin, err := binaryPath(o.FluxBinDir, name)
	if err != nil {
		return nil, err
	}
	home := filepath.Join(dir, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("creating home of %s: %w", name, err)
	}
	kubeconfig := filepath.Join(home, "kubeconfig")
	if _, err := cp.kubeconfig(kubeconfig, user, fluxGroups...); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(3)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--watch-all-namespaces",
		"--enable-leader-election=false",
		"--metrics-addr=" + addrs[0],
		"--health-addr=" + addrs[1],
		"--events-addr=" + o.EventsAddr,
		"--log-level=debug",
		"--log-encoding=console",
	}
	own, err := extra(home, addrs[2])
	if err != nil {
		return nil, err
	}
	env, err := childEnv(home, kubeconfig)
	if err != nil {
		return nil, err
	}
	p, err := startProcess(name, bin, append(args, own...), env, dir)
	if err != nil {
		return nil, err
	}
	p.MetricsAddr, p.HealthAddr = addrs[0], addrs[1]
	return p, nil
}

// withArgs appends the caller's flags to a controller's own.
func withArgs(own extraArgs, callers []string) extraArgs {
	return func(dir, spareAddr string) ([]string, error) {
		args, err := own(dir, spareAddr)
		if err != nil {
			return nil, err
		}
		return append(args, callers...), nil
	}
}

// sourceArgs serves artifacts on loopback; kustomize-controller downloads
// them from the advertised address, which must therefore be reachable here.
func sourceArgs(home, addr string) ([]string, error) {
	storage := filepath.Join(home, "storage")
	if err := os.MkdirAll(storage, 0o700); err != nil {
		return nil, fmt.Errorf("creating artifact storage: %w", err)
	}
	return []string{
		"--storage-path=" + storage,
		"--storage-addr=" + addr,
		"--storage-adv-addr=" + addr,
	}, nil
}

// kustomizeArgs shortens the dependency requeue so tests with dependsOn do
// not wait the default 30s, and forbids remote bases so an overlay can
// never make the environment reach beyond loopback.
func kustomizeArgs(string, string) ([]string, error) {
	return []string{"--requeue-dependency=2s", "--no-remote-bases=true"}, nil
}

// childEnv is the whole environment of a controller: nothing is inherited,
// so a developer's KUBECONFIG or proxy settings cannot point it elsewhere.
// Each controller gets a TMPDIR of its own: kustomize-controller purges
// every kustomization-* dir in its TMPDIR at startup, which would delete
// the build dirs of another environment's controller running beside it
// (parallel test packages).
func childEnv(home, kubeconfig string) ([]string, error) {
	tmp := filepath.Join(home, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("creating controller TMPDIR: %w", err)
	}
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"KUBECONFIG=" + kubeconfig,
		"NO_PROXY=127.0.0.1,localhost",
	}, nil
}

// joinStop stops the started processes after a failed start and joins any
// stop error to err.
func joinStop(err error, o *Options, ps ...*Process) error {
	for _, p := range ps {
		if serr := p.Stop(o.StopGrace); serr != nil {
			err = fmt.Errorf("%w; %w", err, serr)
		}
	}
	return err
}
