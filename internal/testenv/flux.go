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
	HelmControllerUser      = "system:serviceaccount:flux-system:helm-controller"
)

// fluxGroups gives the controllers cluster-admin, as their ClusterRoleBinding
// does in a default Flux installation.
var fluxGroups = []string{"system:masters", "system:serviceaccounts", "system:serviceaccounts:flux-system"}

// startFlux starts source-controller, kustomize-controller and, with
// Options.Helm, helm-controller against the control plane, and waits until
// each reports ready. Each is in its Env field as soon as it started, for
// the caller to stop if a later one fails.
func (e *Env) startFlux(ctx context.Context) error {
	o := &e.opts
	started := []struct {
		p *(*Process)
		c fluxController
	}{
		{&e.SourceController, fluxController{name: binSourceController, binDir: o.FluxBinDir, user: SourceControllerUser,
			args: withArgs(sourceArgs, o.SourceControllerArgs)}},
		{&e.KustomizeController, fluxController{name: binKustomizeController, binDir: o.FluxBinDir, user: KustomizeControllerUser,
			args: withArgs(kustomizeArgs, o.KustomizeControllerArgs)}},
	}
	if o.Helm {
		started = append(started, struct {
			p *(*Process)
			c fluxController
		}{&e.HelmController, fluxController{name: binHelmController, binDir: o.helmBinDir(), user: HelmControllerUser,
			args: withArgs(helmArgs, o.HelmControllerArgs)}})
	}
	for _, s := range started {
		p, err := startController(o, e.cp, e.Dir, s.c)
		if err != nil {
			return err
		}
		*s.p = p
	}
	// All start before any is waited for, so their start-ups overlap.
	for _, s := range started {
		c := s.c
		p, err := readyOrRestart(ctx, o.StartTimeout, *s.p, func() (*Process, error) {
			return startController(o, e.cp, e.Dir, c)
		})
		*s.p = p
		if err != nil {
			return err
		}
	}
	return nil
}

// fluxController is one Flux controller to start: its binary's name and
// directory, the user it authenticates as, and its own flags.
type fluxController struct {
	name, binDir, user string
	args               extraArgs
}

// extraArgs returns a controller's own flags, given its working directory
// and a loopback address reserved together with its metrics and health
// addresses: reserving them apart could hand one just-closed port out
// twice (seen in CI as source-controller's artifact server failing to
// bind its own metrics port).
type extraArgs func(dir, spareAddr string) ([]string, error)

// startController starts one Flux controller with the flags every
// controller shares plus its own. Flux's install passes the shared ones to
// each controller alike; here metrics and health listen on loopback and
// leader election is off, since each environment runs one replica.
func startController(o *Options, cp *controlPlane, dir string, c fluxController) (*Process, error) {
	name := c.name
	bin, err := binaryPath(c.binDir, name)
	if err != nil {
		return nil, err
	}
	home := filepath.Join(dir, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("creating home of %s: %w", name, err)
	}
	kubeconfig := filepath.Join(home, "kubeconfig")
	if _, err := cp.kubeconfig(kubeconfig, c.user, fluxGroups...); err != nil {
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
	own, err := c.args(home, addrs[2])
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

// helmArgs shortens the dependency requeue as kustomizeArgs does, for
// HelmReleases with dependsOn. helm-controller downloads charts from the
// URL source-controller advertises (sourceArgs), as kustomize-controller
// does its artifacts, so it needs no address of its own.
func helmArgs(string, string) ([]string, error) {
	return []string{"--requeue-dependency=2s"}, nil
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
