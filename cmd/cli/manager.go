package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fluxcd/pkg/auth"
	"github.com/fluxcd/pkg/cache"
	"github.com/fluxcd/pkg/runtime/acl"
	runtimeclient "github.com/fluxcd/pkg/runtime/client"
	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/events"
	feathelper "github.com/fluxcd/pkg/runtime/features"
	"github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/fluxcd/pkg/runtime/pprof"
	"github.com/fluxcd/pkg/runtime/probes"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/handover"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// controllerName is the reporting controller in events, as Flux's
// notification-controller shows it.
const controllerName = "reflux"

// ManagerOptions are the flags of `reflux manager`. They follow the names
// and defaults of Flux's own controllers.
type ManagerOptions struct {
	MetricsAddr string
	HealthAddr  string
	EventsAddr  string
	Concurrent  int
	// LiveWorkers is --live-workers: the live path's parallel
	// evaluations, apart from --concurrent.
	LiveWorkers   int
	PolicyRetry   time.Duration
	ArtifactRetry time.Duration
	// Watch restricts what reflux governs, as Flux's controllers take
	// --watch-all-namespaces and --watch-label-selector (sharding).
	Watch runtimectrl.WatchOptions
	// WatchNamespaces restrict reflux to these namespaces: its caches and
	// live watches list nothing elsewhere (the namespaced profile).
	WatchNamespaces []string
	// Secrets is --secrets: read (watch Secrets like any applied kind),
	// metadata (never read them; report their drift from the audit log)
	// or ignore (never watch them, report nothing).
	Secrets string
	// OverrideManagers mirror kustomize-controller's --override-manager:
	// Flux reverts everything they write, so their changes are held.
	OverrideManagers []string
	// Comparison is --comparison: dry-run (needs patch) or in-process
	// (get, list and watch suffice).
	Comparison string
	// SlowRender is how long a render may take before Drifted says so.
	SlowRender time.Duration
	// RenderTimeout, RenderMaxFileSize and RenderMaxSize are a render's
	// time and size budgets.
	RenderTimeout                    time.Duration
	RenderMaxFileSize, RenderMaxSize int64
	// RenderDelay is the hidden --render-delay: each render waits this
	// long first, so tests see a large tree's slow render at a size that
	// fits CI.
	RenderDelay time.Duration
	// RenderGateFile is the hidden --render-gate-file: while the file
	// exists, renders wait before they build, so a test holds them back
	// for exactly as long as its step takes.
	RenderGateFile string
	// FluxVersion is --kustomize-controller-version.
	FluxVersion string
	// WriteBackTimeout bounds one write-back run.
	WriteBackTimeout time.Duration
	// AuditAddr serves the kube-apiserver audit webhook; empty disables it.
	AuditAddr string
	// AuditTokenFile holds the bearer token the webhook must present.
	AuditTokenFile string
	// AuditTLSCertFile and AuditTLSKeyFile make the webhook serve HTTPS.
	AuditTLSCertFile, AuditTLSKeyFile string
	// AllowedManagers are field managers whose writes are never drift, in
	// addition to the control plane's.
	AllowedManagers []string
	// GitCacheDir keeps clones between write-backs.
	GitCacheDir string
	// InsecureAllowHTTP lets write-back push over http:// (tests only).
	InsecureAllowHTTP bool
	// RecordKeySecret names the Secret, in reflux's namespace, whose key
	// seals Drift records.
	RecordKeySecret string
	// TeamLabel is the Kustomization label read as the drift metrics'
	// team label.
	TeamLabel string
	// DefaultServiceAccount mirrors kustomize-controller's
	// --default-service-account (the name fluxcd/pkg/auth gives it).
	DefaultServiceAccount string
	// ACL mirrors kustomize-controller's --no-cross-namespace-refs.
	ACL acl.Options
	// StandbyHolds makes a replica that does not lead hold, while no
	// replica leads, what Flux would revert (reverse/standby).
	StandbyHolds bool

	// KubeConfig mirrors kustomize-controller's kubeconfig rules for
	// remote clusters (--insecure-kubeconfig-exec, --insecure-kubeconfig-tls).
	KubeConfig runtimeclient.KubeConfigOptions
	// ClusterProbeInterval is how often a remote cluster is probed.
	ClusterProbeInterval time.Duration
	// DefaultKubeConfigServiceAccount, FeatureGates and TokenCache mirror
	// kustomize-controller's flags for workload identity
	// (spec.kubeConfig.configMapRef): reflux must reach a remote cluster
	// as the identity Flux applies with.
	DefaultKubeConfigServiceAccount string
	FeatureGates                    feathelper.FeatureGates
	TokenCache                      cache.TokenFlags

	Logger         logger.Options
	LeaderElection leaderelection.Options
	Client         runtimeclient.Options
}

// NewManagerCommand returns `reflux manager`, which runs the controllers.
func NewManagerCommand() *cobra.Command {
	opts := &ManagerOptions{}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the reflux controllers",
		Long: "Run the reflux controllers against the cluster in KUBECONFIG or the in-cluster config.\n" +
			"Flags follow Flux's controllers.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return RunManager(cmd, opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.MetricsAddr, "metrics-addr", ":8080", "The address the metric endpoint binds to.")
	fs.StringVar(&opts.HealthAddr, "health-addr", ":9440", "The address the health endpoint binds to.")
	fs.StringVar(&opts.EventsAddr, "events-addr", "", "The address of Flux's notification-controller events endpoint.")
	fs.IntVar(&opts.Concurrent, "concurrent", 4, "The number of concurrent reconciles per controller.")
	fs.IntVar(&opts.LiveWorkers, "live-workers", manager.DefaultLiveWorkers,
		"The number of live changes evaluated, held and recorded in parallel. Each waits mostly on the apiserver, "+
			"so a new leader's backlog is held before Flux's next reconcile only with enough of them.")
	// Flux's own flag names and meanings (fluxcd/pkg/runtime/controller).
	fs.BoolVar(&opts.Watch.AllNamespaces, "watch-all-namespaces", true,
		"Watch for resources in all namespaces; if false, only the runtime namespace (RUNTIME_NAMESPACE), live objects included.")
	fs.StringVar(&opts.Watch.LabelSelector, "watch-label-selector", "",
		"Govern only Kustomizations and ReverseSyncPolicies with matching labels, e.g. 'sharding.fluxcd.io/key=shard1'.")
	fs.StringSliceVar(&opts.WatchNamespaces, "watch-namespaces", nil,
		"Restrict reflux to these namespaces (comma-separated), for RBAC granted by Roles in them only: Kustomizations, policies and live objects elsewhere are not watched, nor cluster-scoped live objects.")
	fs.StringVar(&opts.Secrets, "secrets", string(manager.SecretsMetadata),
		"Whether reflux reads the Secrets Flux applies: 'read' watches them for drift and writes it back SOPS-encrypted (needs get, list, watch and patch on Secrets: config/components/secrets); 'metadata' never reads them and reports who wrote a declared Secret, and when, from the audit webhook (--audit-addr), never holding or writing it; 'ignore' reports nothing of them.")
	fs.StringSliceVar(&opts.OverrideManagers, "override-manager", nil,
		"Field managers kustomize-controller runs with --override-manager: Flux reverts all they write, so reflux holds their changes at once.")
	fs.StringVar(&opts.Comparison, "comparison", string(drift.ComparisonDryRun),
		"How drift is computed: 'dry-run' (a server-side dry-run apply, needs patch on every governed object) or 'in-process' (the apiserver's merge code and OpenAPI schema, for read-only identities).")
	fs.DurationVar(&opts.SlowRender, "slow-render-threshold", 10*time.Second,
		"How long rendering an applied revision may take before the Drifted condition reports it as Progressing.")
	fs.DurationVar(&opts.RenderTimeout, "render-timeout", desired.DefaultBuildTimeout,
		"How long one kustomize build may run; past it the render fails (Drifted Unknown, RenderFailed) and the build is abandoned.")
	fs.Int64Var(&opts.RenderMaxFileSize, "render-max-file-size", kustomize.DefaultMaxFileSize,
		"The largest file, in bytes, a kustomize build may read; a larger one fails the render before it is parsed.")
	fs.Int64Var(&opts.RenderMaxSize, "render-max-size", kustomize.DefaultMaxLoadSize,
		"How many bytes one kustomize build may read in all, a file counted each time it is read; past it the render fails.")
	fs.StringVar(&opts.FluxVersion, "kustomize-controller-version", kustomize.PairedFluxVersion,
		"The version of the kustomize-controller that applies the governed Kustomizations. kustomize stamps it on 'app.kubernetes.io/managed-by' for 'buildMetadata: [managedByLabel]', so reflux's renders must name the same one.")
	fs.DurationVar(&opts.RenderDelay, "render-delay", 0,
		"For tests only: how long each render waits before it builds, as a tree of tens of thousands of objects takes.")
	if err := fs.MarkHidden("render-delay"); err != nil {
		panic(err) // the flag is defined just above
	}
	fs.StringVar(&opts.RenderGateFile, "render-gate-file", "",
		"For tests only: while this file exists, each render waits before it builds.")
	if err := fs.MarkHidden("render-gate-file"); err != nil {
		panic(err) // the flag is defined just above
	}
	fs.DurationVar(&opts.WriteBackTimeout, "write-back-timeout", 2*time.Minute,
		"How long one write-back run (branch checks, edits, verification, commit, push) may take before it is retried with backoff.")
	fs.DurationVar(&opts.PolicyRetry, "policy-retry-interval", time.Minute,
		"How soon a policy waiting on a missing or broken signing Secret is checked again.")
	fs.DurationVar(&opts.ArtifactRetry, "artifact-retry-interval", 30*time.Second,
		"How soon a Kustomization whose applied revision cannot be fetched is tried again.")
	fs.StringVar(&opts.AuditAddr, "audit-addr", "",
		"The address the kube-apiserver audit webhook endpoint (/audit) binds to; empty disables user attribution.")
	fs.StringVar(&opts.AuditTokenFile, "audit-token-file", "",
		"A file holding the bearer token the hub's apiserver must present to the audit webhook. A remote cluster's apiserver presents the token its kubeconfig Secret holds under the key 'audit-token'. Needs --audit-tls-cert-file: kube-apiserver sends a token over HTTPS only.")
	fs.StringVar(&opts.AuditTLSCertFile, "audit-tls-cert-file", "",
		"A PEM certificate the audit webhook serves HTTPS with (reloaded when it changes); with --audit-tls-key-file.")
	fs.StringVar(&opts.AuditTLSKeyFile, "audit-tls-key-file", "",
		"The PEM private key of --audit-tls-cert-file.")
	fs.StringVar(&opts.GitCacheDir, "git-cache-dir", "",
		"Where write-back keeps one clone per repository between runs (default $TMPDIR/reflux-git).")
	fs.BoolVar(&opts.InsecureAllowHTTP, "insecure-allow-http", false,
		"Allow write-back to push over plain http://; for test environments only.")
	fs.StringVar(&opts.RecordKeySecret, "record-key-secret", "reflux-record-key",
		"The Secret in reflux's namespace (RUNTIME_NAMESPACE, default reflux-system) whose key seals Drift records; created when missing.")
	fs.StringSliceVar(&opts.AllowedManagers, "allowed-field-managers", nil,
		"Field managers whose writes are never drift, besides the control plane's (for example an autoscaler).")
	fs.StringVar(&opts.TeamLabel, "team-label", "",
		"A Kustomization label (for example 'team') whose value becomes the team label of the drift metrics; empty leaves team empty.")
	fs.StringVar(&opts.DefaultServiceAccount, "default-service-account", "",
		"The ServiceAccount, in a Kustomization's or HelmRelease's namespace, reflux impersonates for its dry runs, holds and releases when the object sets no spec.serviceAccountName, as kustomize-controller and helm-controller do; empty acts as reflux itself.")
	fs.DurationVar(&opts.ClusterProbeInterval, "cluster-probe-interval", 10*time.Second,
		"How often each remote cluster a Kustomization targets through spec.kubeConfig is probed, and its kubeconfig Secret read again: how soon an unreachable cluster, or a rotated kubeconfig, is noticed.")
	fs.StringVar(&opts.DefaultKubeConfigServiceAccount, auth.ControllerFlagDefaultKubeConfigServiceAccount, "",
		"The ServiceAccount whose workload identity reaches a remote cluster named by spec.kubeConfig.configMapRef when its ConfigMap names none, as kustomize-controller's flag of the same name; set both alike.")
	fs.BoolVar(&opts.StandbyHolds, "standby-holds", true,
		"With --enable-leader-election, a replica that does not lead watches the governed objects too, and holds an edit Flux would revert while no replica leads (after the leader died, before the next one has listed), for the next leader to record. Costs each such replica the live watches' memory.")
	opts.FeatureGates.BindFlags(fs)
	opts.TokenCache.BindFlags(fs, tokenCacheDefaultMaxSize)
	opts.KubeConfig.BindFlags(fs)
	opts.ACL.BindFlags(fs)
	opts.Logger.BindFlags(fs)
	opts.LeaderElection.BindFlags(fs)
	opts.Client.BindFlags(fs)
	return cmd
}

// RunManager runs the controllers until the command's context ends.
func RunManager(cmd *cobra.Command, opts *ManagerOptions) error {
	log := logger.NewLogger(opts.Logger)
	ctrl.SetLogger(log)
	if opts.Concurrent < 1 {
		return errors.New("--concurrent must be at least 1")
	}
	if opts.LiveWorkers < 1 {
		return errors.New("--live-workers must be at least 1")
	}
	switch manager.SecretAccess(opts.Secrets) {
	case manager.SecretsRead, manager.SecretsMetadata, manager.SecretsIgnore:
	default:
		return fmt.Errorf("--secrets: unknown value %q: want \"read\", \"metadata\" or \"ignore\"", opts.Secrets)
	}
	comparison, err := drift.ParseComparison(opts.Comparison)
	if err != nil {
		return fmt.Errorf("--comparison: %w", err)
	}
	if err := setupWorkloadIdentity(opts, log); err != nil {
		return err
	}
	tokenCache, err := newTokenCache(opts)
	if err != nil {
		return err
	}
	scheme, err := manager.NewScheme()
	if err != nil {
		return err
	}
	// Begun by the audit webhook when it serves: the leader lock asks it
	// whether this replica heard the audit log while none led.
	listening := &handover.Listening{}
	mgr, err := newManager(opts, scheme, listening, log)
	if err != nil {
		return err
	}
	probes.SetupChecks(mgr, log)
	// pprof on the metrics endpoint, as Flux's controllers serve it.
	for path, h := range pprof.GetHandlers() {
		if err := mgr.AddMetricsServerExtraHandler(path, h); err != nil {
			return fmt.Errorf("adding pprof handler %s: %w", path, err)
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	eventRecorder, err := events.NewRecorder(mgr, log, opts.EventsAddr, controllerName)
	if err != nil {
		return fmt.Errorf("creating event recorder: %w", err)
	}
	auditStore, auditSenders, err := addAuditReceiver(mgr, opts, listening, log)
	if err != nil {
		return err
	}
	selector, err := watchSelector(opts)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	recordKey, err := loadRecordKey(ctx, mgr, opts)
	if err != nil {
		return err
	}
	if _, err := manager.Setup(ctx, mgr, manager.Options{
		RecordKey:             recordKey,
		Concurrent:            opts.Concurrent,
		LiveWorkers:           opts.LiveWorkers,
		Events:                eventRecorder,
		Audit:                 auditStore,
		AuditSenders:          auditSenders,
		AllowedManagers:       opts.AllowedManagers,
		OverrideManagers:      opts.OverrideManagers,
		Comparison:            comparison,
		SlowRender:            opts.SlowRender,
		RenderDelay:           opts.RenderDelay,
		RenderGate:            fileGate(opts.RenderGateFile),
		RenderTimeout:         opts.RenderTimeout,
		RenderMaxFileSize:     opts.RenderMaxFileSize,
		RenderMaxSize:         opts.RenderMaxSize,
		FluxVersion:           opts.FluxVersion,
		WriteBackTimeout:      opts.WriteBackTimeout,
		WatchNamespace:        watchNamespace(opts),
		WatchNamespaces:       opts.WatchNamespaces,
		Secrets:               manager.SecretAccess(opts.Secrets),
		WatchSelector:         selector,
		GitCacheDir:           opts.GitCacheDir,
		AllowInsecureHTTP:     opts.InsecureAllowHTTP,
		TeamLabel:             opts.TeamLabel,
		DefaultServiceAccount: opts.DefaultServiceAccount,
		NoCrossNamespaceRefs:  opts.ACL.NoCrossNamespaceRefs,
		PolicyRetry:           opts.PolicyRetry,
		ArtifactRetry:         opts.ArtifactRetry,
		KubeConfig:            opts.KubeConfig,
		ClusterProbeInterval:  opts.ClusterProbeInterval,
		TokenCache:            tokenCache,
		Standby:               standbyOptions(opts),
		Registerer:            crmetrics.Registry,
		Log:                   log,
	}); err != nil {
		return err
	}
	log.Info("starting manager")
	return mgr.Start(ctx)
}

func newManager(opts *ManagerOptions, scheme *runtime.Scheme, listening *handover.Listening, log logr.Logger) (ctrl.Manager, error) {
	restConfig := runtimeclient.GetConfigOrDie(opts.Client)
	if !opts.Watch.AllNamespaces && os.Getenv("RUNTIME_NAMESPACE") == "" {
		return nil, errors.New("--watch-all-namespaces=false needs RUNTIME_NAMESPACE set")
	}
	selector, err := watchSelector(opts)
	if err != nil {
		return nil, err
	}
	lock, events, err := handoverLock(restConfig, opts, listening, log)
	if err != nil {
		return nil, err
	}
	// The Deployment sets RUNTIME_NAMESPACE to its own namespace, where
	// controller-runtime would find the Lease in cluster anyway; out of
	// cluster (a local run, the e2e journeys) it is the only way to name it.
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.HealthAddr,
		LeaderElection:                opts.LeaderElection.Enable,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionNamespace:       os.Getenv("RUNTIME_NAMESPACE"),
		LeaderElectionReleaseOnCancel: opts.LeaderElection.ReleaseOnCancel,
		LeaseDuration:                 &opts.LeaderElection.LeaseDuration,
		RenewDeadline:                 &opts.LeaderElection.RenewDeadline,
		RetryPeriod:                   &opts.LeaderElection.RetryPeriod,
		// Set when the audit webhook is served (internal/handover); when
		// nil, controller-runtime builds the same Lease lock itself.
		LeaderElectionResourceLockInterface: leaderLock(lock),
		Cache:                               manager.CacheOptionsFor(append([]string{watchNamespace(opts)}, opts.WatchNamespaces...), selector),
		Client:                              manager.ClientOptions(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if events != nil {
		events.bind(mgr)
	}
	return mgr, nil
}

// loadRecordKey reads or creates the record key Secret before the
// manager starts, with a direct client: the manager's cache does not hold
// Secrets, and the engine cannot start without the key.
func loadRecordKey(ctx context.Context, mgr ctrl.Manager, opts *ManagerOptions) ([]byte, error) {
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, fmt.Errorf("creating a client for the record key: %w", err)
	}
	ns := os.Getenv("RUNTIME_NAMESPACE")
	if ns == "" {
		ns = defaultNamespace
	}
	return manager.LoadRecordKey(ctx, c, types.NamespacedName{Namespace: ns, Name: opts.RecordKeySecret})
}

// defaultNamespace is where config/default installs reflux.
const defaultNamespace = "reflux-system"

// watchSelector parses --watch-label-selector.
func watchSelector(opts *ManagerOptions) (labels.Selector, error) {
	selector, err := runtimectrl.GetWatchSelector(opts.Watch)
	if err != nil {
		return nil, fmt.Errorf("parsing --watch-label-selector %q: %w", opts.Watch.LabelSelector, err)
	}
	return selector, nil
}

// watchNamespace is the one namespace the live watches may list, or "" for
// all of them.
func watchNamespace(opts *ManagerOptions) string {
	if opts.Watch.AllNamespaces {
		return ""
	}
	return os.Getenv("RUNTIME_NAMESPACE")
}

// fileGate holds a render back while path exists (--render-gate-file);
// nil when no path is given.
func fileGate(path string) func(context.Context) error {
	if path == "" {
		return nil
	}
	return func(ctx context.Context) error {
		for {
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// standbyOptions are the standby's (reverse/standby): nil, for none,
// without leader election, since then no other replica takes over.
func standbyOptions(opts *ManagerOptions) *manager.StandbyOptions {
	if !opts.LeaderElection.Enable || !opts.StandbyHolds {
		return nil
	}
	return &manager.StandbyOptions{Lease: types.NamespacedName{Namespace: os.Getenv("RUNTIME_NAMESPACE"), Name: leaderElectionID},
		RenewDeadline: opts.LeaderElection.RenewDeadline, RetryPeriod: opts.LeaderElection.RetryPeriod}
}
