package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configures Start. The zero value is valid: every field has a
// default.
type Options struct {
	// RepoRoot is the module root holding bin/ and config/. Defaults to the
	// first directory above the working directory with a go.mod.
	RepoRoot string
	// BinDir holds etcd, kube-apiserver and the Flux controllers with their
	// CRDs. Defaults to RepoRoot/bin.
	BinDir string
	// KubeBinDir holds etcd, kube-apiserver and kube-controller-manager
	// when they are not the ones in BinDir. Defaults to
	// $REFLUX_TESTENV_KUBE_DIR, which `make test-kube-matrix` sets to
	// bin/kube-<minor> so the same suites run against a previous
	// Kubernetes minor, and else to BinDir.
	KubeBinDir string
	// FluxBinDir holds the Flux controllers and their CRDs when they are
	// not the ones in BinDir. Defaults to $REFLUX_TESTENV_FLUX_DIR, which
	// `make test-flux-latest` sets to bin/flux-latest so the same suites
	// run against the newest Flux, and else to BinDir.
	FluxBinDir string
	// CRDDirectories are installed in addition to Flux's CRDs and
	// RepoRoot/config/crd/bases.
	CRDDirectories []string
	// Scheme is used by Env.Client. Defaults to client-go's kinds; Flux's
	// source, kustomize and helm kinds are always added to it.
	Scheme *runtime.Scheme
	// AuditWebhook, when set, makes kube-apiserver send audit events to a
	// webhook.
	AuditWebhook *AuditWebhook
	// EventsAddr is passed to every controller as --events-addr, e.g. the
	// URL of a notification-controller stand-in. Empty sends none.
	EventsAddr string
	// SourceControllerArgs, KustomizeControllerArgs and HelmControllerArgs
	// are appended to the controllers' flags; a repeated flag overrides the
	// default, e.g. "--override-manager=kubectl-edit" or
	// "--feature-gates=...".
	SourceControllerArgs, KustomizeControllerArgs, HelmControllerArgs []string
	// Helm also installs helm-controller's CRDs and starts helm-controller
	// beside the other two, for tests with HelmReleases (issue 19). It is
	// off by default so that suites without HelmReleases start no third
	// controller. helm-controller comes from FluxBinDir when it is there,
	// else from BinDir (see helmBinDir).
	Helm bool
	// WithoutFlux starts only the control plane and the git server, for
	// tests that do not need the controllers. It excludes Helm.
	WithoutFlux bool
	// WithoutRefluxCRDs leaves config/crd/bases out of the CRDs installed
	// at start, for tests that install reflux as a user does, through Flux.
	WithoutRefluxCRDs bool
	// Workloads runs kube-controller-manager's deployment, replicaset and
	// namespace controllers beside its clusterrole-aggregation controller,
	// so that a Deployment reports the status kstatus (a Flux
	// Kustomization's wait) reads, and a deleted namespace goes. No kubelet
	// runs: only a Deployment scaled to zero becomes Available.
	Workloads bool
	// StartTimeout bounds each component's start. Defaults to 60s.
	StartTimeout time.Duration
	// WaitTimeout bounds the Reconcile and WaitForReady helpers. Defaults
	// to 60s.
	WaitTimeout time.Duration
	// StopGrace is how long a process may take to exit after SIGTERM
	// before it is killed. Defaults to 10s.
	StopGrace time.Duration
}

// Env is a running environment. Stop it with Stop.
type Env struct {
	// Config is an admin (system:masters) connection to kube-apiserver.
	Config *rest.Config
	// Client uses Config and the environment's scheme.
	Client client.Client
	// Scheme knows client-go's and Flux's kinds and any given in Options.
	Scheme *runtime.Scheme
	// KubeconfigPath is a kubeconfig file for Config, for kubectl or a
	// reflux process under test.
	KubeconfigPath string
	// Dir is the temporary directory holding logs, kubeconfigs, the git
	// repositories and artifact storage. Stop removes it.
	Dir string
	// AuditWebhookURL is where kube-apiserver sends audit events, when
	// Options.AuditWebhook was set.
	AuditWebhookURL string
	// AuditWebhookAddr is the loopback host:port reserved for the audit
	// receiver when Options.AuditWebhook.URL was empty.
	AuditWebhookAddr string
	// AuditWebhookTLS is the certificate the receiver at AuditWebhookAddr
	// serves, when Options.AuditWebhook.Token asked for HTTPS.
	AuditWebhookTLS *AuditTLS
	// Kubernetes is the kube-apiserver and etcd the environment runs, and
	// the version the apiserver reports.
	Kubernetes Kubernetes
	// Git serves repositories over HTTP and SSH.
	Git *GitServer
	// SourceController and KustomizeController are the Flux controllers,
	// nil with Options.WithoutFlux.
	SourceController, KustomizeController *Process
	// HelmController is Flux's helm-controller, nil unless Options.Helm.
	HelmController *Process

	opts     Options
	cp       *controlPlane
	cpMu     sync.Mutex // one RestartAPIServer at a time
	kcmMu    sync.Mutex
	kcm      *Process
	usersMu  sync.Mutex
	users    int
	stopOnce sync.Once
	stopErr  error
}

// Start starts the control plane, the git server and, unless
// Options.WithoutFlux, the Flux controllers (helm-controller only with
// Options.Helm), and waits until each is ready.
// On error everything already started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Env, retErr error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	crdDirs, err := crdDirectories(opts.RepoRoot, opts.FluxBinDir, opts.helmBinDir(), opts.CRDDirectories, !opts.WithoutRefluxCRDs)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "reflux-testenv-")
	if err != nil {
		return nil, fmt.Errorf("creating environment directory: %w", err)
	}
	e := &Env{Dir: dir, Scheme: opts.Scheme, opts: opts}
	defer func() {
		if retErr != nil {
			// The directory stays so the logs can explain the failure.
			retErr = fmt.Errorf("%w (logs in %s)", errors.Join(retErr, e.stop(false)), dir)
		}
	}()
	if e.cp, err = startControlPlane(&e.opts, crdDirs, dir); err != nil {
		return nil, err
	}
	e.AuditWebhookURL, e.AuditWebhookAddr, e.AuditWebhookTLS = e.cp.audit.url, e.cp.audit.addr, e.cp.audit.tls
	if err := e.connect(); err != nil {
		return nil, err
	}
	if e.Kubernetes, err = e.cp.describe(e.Config); err != nil {
		return nil, err
	}
	if err := e.Kubernetes.check(os.Getenv(KubeVersionEnv)); err != nil {
		return nil, err
	}
	if e.Git, err = startGitServer(filepath.Join(dir, "git")); err != nil {
		return nil, err
	}
	if !opts.WithoutFlux {
		// What startFlux started is in e's fields, so the deferred stop
		// above stops it too when it fails.
		if err := e.startFlux(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// connect writes the admin kubeconfig and builds the client.
func (e *Env) connect() error {
	e.KubeconfigPath = filepath.Join(e.Dir, "admin.kubeconfig")
	cfg, err := e.cp.kubeconfig(e.KubeconfigPath, "admin", "system:masters")
	if err != nil {
		return err
	}
	e.Config = cfg
	if e.Client, err = client.New(cfg, client.Options{Scheme: e.Scheme}); err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	return nil
}

// User is a client-certificate user of the environment's apiserver.
type User struct {
	// Name is the user name audit events and managedFields' writers see.
	Name string
	// Config connects as the user.
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file for the user, e.g. for kubectl.
	KubeconfigPath string
}

// AddUser provisions a user in groups, such as a human in system:masters
// whose kubectl edits a test wants attributed to them.
func (e *Env) AddUser(name string, groups ...string) (User, error) {
	// Provisioning signs a certificate with the control plane's CA and the
	// file name counts users; one at a time keeps both consistent.
	e.usersMu.Lock()
	defer e.usersMu.Unlock()
	e.users++
	path := filepath.Join(e.Dir, fmt.Sprintf("user-%d.kubeconfig", e.users))
	cfg, err := e.cp.kubeconfig(path, name, groups...)
	if err != nil {
		return User{}, err
	}
	return User{Name: name, Config: cfg, KubeconfigPath: path}, nil
}

// Stop stops every process, the git server and the control plane, and
// removes Env.Dir. Stopping twice returns the first result.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() { e.stopErr = e.stop(true) })
	return e.stopErr
}

// Processes returns the environment's child processes whose logs are worth
// reading after a failure, in start order.
func (e *Env) Processes() []*Process {
	var ps []*Process
	for _, p := range []*Process{e.SourceController, e.KustomizeController, e.HelmController, e.controllerManager()} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// LogPaths returns the log files of etcd, kube-apiserver and every
// controller.
func (e *Env) LogPaths() []string {
	paths := []string{filepath.Join(e.Dir, binEtcd+".log"), filepath.Join(e.Dir, binKubeAPIServer+".log")}
	for _, p := range e.Processes() {
		paths = append(paths, p.LogPath)
	}
	return paths
}

// stop tears down in reverse start order. Controllers go first so they do
// not log errors about an apiserver that has gone away. Without removeDir
// the directory, and so the logs, stay for a caller that still reads them.
func (e *Env) stop(removeDir bool) error {
	var errs []error
	for _, p := range e.Processes() {
		errs = append(errs, p.Stop(e.opts.StopGrace))
	}
	if e.Git != nil {
		errs = append(errs, e.Git.stop())
	}
	if e.cp != nil {
		errs = append(errs, e.cp.stop())
	}
	if removeDir {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", e.Dir, err))
		}
	}
	return errors.Join(errs...)
}

// complete fills defaults and builds the scheme.
func (o *Options) complete() error {
	if o.RepoRoot == "" {
		root, err := findRepoRoot(".")
		if err != nil {
			return err
		}
		o.RepoRoot = root
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.RepoRoot, "bin")
	}
	o.FluxBinDir = overrideDir(o.FluxBinDir, os.Getenv(FluxDirEnv), o.RepoRoot, o.BinDir)
	o.KubeBinDir = overrideDir(o.KubeBinDir, os.Getenv(KubeDirEnv), o.RepoRoot, o.BinDir)
	if o.Helm && o.WithoutFlux {
		return errors.New("testenv: Options.Helm starts helm-controller, which Options.WithoutFlux excludes")
	}
	for _, d := range []*time.Duration{&o.StartTimeout, &o.WaitTimeout} {
		if *d <= 0 {
			*d = 60 * time.Second
		}
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 10 * time.Second
	}
	if o.Scheme == nil {
		o.Scheme = runtime.NewScheme()
	}
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme,
	} {
		if err := add(o.Scheme); err != nil {
			return fmt.Errorf("building scheme: %w", err)
		}
	}
	return nil
}

// helmBinDir returns where helm-controller and its CRDs are, or "" when
// the environment runs none.
func (o *Options) helmBinDir() string {
	if !o.Helm {
		return ""
	}
	return helmBinDir(o.FluxBinDir, o.BinDir)
}
