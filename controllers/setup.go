package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/metrics"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/reverse/attribution"
	"github.com/reflux-dev/reflux/reverse/branches"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/policy"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/source"
	"github.com/reflux-dev/reflux/reverse/tenancy"
	"github.com/reflux-dev/reflux/reverse/writeback"
)

// Options wire reflux's controllers into a manager. The manager binary and
// the end-to-end tests share this one wiring.
type Options struct {
	// Concurrent is the number of parallel reconciles per controller and
	// of live-change workers.
	Concurrent int
	// Events records Kubernetes events and forwards them to Flux's
	// notification-controller.
	Events governor.EventRecorder
	// Writer writes drift to Git. Nil writes signed branches with
	// reverse/branches, keeping clones in GitCacheDir.
	Writer governor.Writer
	// GitCacheDir keeps one clone per repository between write-backs.
	GitCacheDir string
	// AllowInsecureHTTP lets write-back push over plain http://, for test
	// environments only.
	AllowInsecureHTTP bool
	// WriteBackTimeout bounds one write-back run; default 2m.
	WriteBackTimeout time.Duration
	// Audit, when set, attributes changes to users from audit events.
	Audit *audit.Store
	// AllowedManagers are field managers whose writes are never drift, in
	// addition to drift.DefaultAllowedManagers (the control plane, an
	// autoscaler, Flux and reflux).
	AllowedManagers []string
	// OverrideManagers are kustomize-controller's --override-manager
	// names: Flux reverts everything they write, so reflux holds their
	// changes as it holds kubectl's.
	OverrideManagers []string
	// Comparison is how drift is computed; empty is drift.ComparisonDryRun.
	Comparison drift.Comparison
	// Fetcher downloads source artifacts; Flux's archive fetcher if nil.
	Fetcher desired.Fetcher
	// RenderWorkers bounds the renders that run at once; default 2.
	RenderWorkers int
	// SlowRender is how long a render may take before the Drifted
	// condition reports it; default 10s.
	SlowRender time.Duration
	// PolicyRetry and ArtifactRetry are how soon a policy waiting on its
	// Secret, and a Kustomization waiting on its artifact, are retried.
	PolicyRetry, ArtifactRetry time.Duration
	// WatchNamespace, when set, restricts the live watches to one
	// namespace (--watch-all-namespaces=false).
	WatchNamespace string
	// WatchNamespaces, when set, restrict the live watches to these
	// namespaces (with WatchNamespace, if set).
	WatchNamespaces []string
	// Secrets is how reflux treats the Secrets Flux applies (--secrets);
	// empty is SecretsRead.
	Secrets SecretAccess
	// WatchSelector is the shard's --watch-label-selector; the manager's
	// cache must apply it to Kustomizations and ReverseSyncPolicies. Nil
	// selects everything.
	WatchSelector labels.Selector
	// RecordKey seals the Drift records reflux writes, so that it acts on
	// no record it did not write (LoadRecordKey reads or creates it).
	// Required: at least record.MinSealKey bytes.
	RecordKey []byte
	// TeamLabel is the Kustomization label whose value is the team label
	// of the drift metrics (--team-label); empty leaves team empty.
	TeamLabel string
	// DefaultServiceAccount is kustomize-controller's
	// --default-service-account: the ServiceAccount, in a Kustomization's
	// namespace, reflux acts as when the Kustomization names none; empty
	// acts as reflux itself.
	DefaultServiceAccount string
	// NoCrossNamespaceRefs is kustomize-controller's
	// --no-cross-namespace-refs: a Kustomization whose sourceRef points
	// into another namespace is refused.
	NoCrossNamespaceRefs bool
	// ImpersonationCacheSize bounds the impersonating clients kept, one
	// per tenant identity; default tenancy.DefaultCacheSize.
	ImpersonationCacheSize int
	// Registerer takes reflux's metrics; nil skips registration.
	Registerer prometheus.Registerer
	Log        logr.Logger
}

// Setup registers every reflux controller and the engine with mgr, and
// returns the engine (for tests and benchmarks to observe).
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) (*governor.Governor, error) {
	if opts.Concurrent < 1 {
		opts.Concurrent = 1
	}
	recorder := metrics.NewRecorder()
	m, err := governor.NewMetrics(governor.WithTeamLabel(opts.TeamLabel))
	if err != nil {
		return nil, fmt.Errorf("creating metrics: %w", err)
	}
	if opts.Registerer != nil {
		for _, c := range append(recorder.Collectors(), m.Collectors()...) {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("registering metrics: %w", err)
			}
		}
	}
	policies := &ReverseSyncPolicyReconciler{
		Client: mgr.GetClient(), Metrics: runtimectrl.NewMetrics(mgr, recorder), RetryInterval: opts.PolicyRetry,
		ForgeChecks: policy.NewForgeChecks(time.Now),
	}
	if err := policies.SetupWithManager(ctx, mgr, ReverseSyncPolicyReconcilerOptions{MaxConcurrentReconciles: opts.Concurrent}); err != nil {
		return nil, fmt.Errorf("setting up ReverseSyncPolicy controller: %w", err)
	}
	notify := newNotifier()
	fetcher := opts.Fetcher
	if fetcher == nil {
		fetcher = desired.NewFetcher(3, 256<<20, 1<<30)
	}
	renderer := desired.NewRenderer(fetcher, desired.RendererOptions{
		Workers: opts.RenderWorkers, RetryAfter: opts.ArtifactRetry, Observer: m, Done: notify.Send,
	})
	gov, watcher, err := newEngine(mgr, opts, m, notify, renderer)
	if err != nil {
		return nil, err
	}
	for _, r := range []func(context.Context) error{gov.Start, notify.Start, func(ctx context.Context) error {
		<-ctx.Done()
		watcher.Stop()
		return nil
	}} {
		if err := mgr.Add(runnable(r)); err != nil {
			return nil, err
		}
	}
	ks := &KustomizationReconciler{
		Client: mgr.GetClient(), Metrics: runtimectrl.NewMetrics(mgr, recorder), Governor: gov, Watcher: watcher,
		Renderer: renderer, Drift: m, RetryInterval: opts.ArtifactRetry, SlowRender: opts.SlowRender,
		DefaultServiceAccount: opts.DefaultServiceAccount, NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
	}
	if err := ks.SetupWithManager(mgr, KustomizationReconcilerOptions{
		MaxConcurrentReconciles: opts.Concurrent, Notifications: notify.out,
	}); err != nil {
		return nil, fmt.Errorf("setting up Kustomization controller: %w", err)
	}
	return gov, nil
}

// runnable adapts a function to manager.Runnable.
type runnable func(context.Context) error

func (r runnable) Start(ctx context.Context) error { return r(ctx) }

func newEngine(mgr ctrl.Manager, opts Options, m *governor.Metrics, notify *notifier, renders governor.Renders) (*governor.Governor, *Watcher, error) {
	allowed := append(drift.DefaultAllowedManagers(), opts.AllowedManagers...)
	dopts := []drift.Option{drift.WithAllowedManagers(allowed...), drift.WithOverrideManagers(opts.OverrideManagers...)}
	if opts.Comparison == drift.ComparisonInProcess {
		dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return nil, nil, fmt.Errorf("creating discovery client: %w", err)
		}
		dopts = append(dopts, drift.WithInProcessComparison(drift.NewOpenAPITypes(dc.OpenAPIV3())))
	}
	detector, err := drift.New(mgr.GetClient(), dopts...)
	if err != nil {
		return nil, nil, fmt.Errorf("creating drift detector: %w", err)
	}
	dyn, err := dynamic.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	writer := opts.Writer
	if writer == nil {
		if writer, err = newBranchWriter(opts); err != nil {
			return nil, nil, err
		}
	}
	sealer, err := record.NewSealer(opts.RecordKey)
	if err != nil {
		return nil, nil, err
	}
	readSecrets := opts.Secrets == "" || opts.Secrets == SecretsRead
	watcher := NewWatcher(dyn, mgr.GetRESTMapper(), WatcherOptions{Namespace: opts.WatchNamespace, Namespaces: opts.WatchNamespaces,
		IgnoreSecrets: !readSecrets, Log: opts.Log.WithName("live")})
	gopts := governor.Options{
		Sealer: sealer,
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Detector: detector, Holder: Holder{Client: mgr.GetClient()},
		Live: watcher, Renders: renders, Writer: writer, Targets: source.Targets{Reader: mgr.GetAPIReader()}, Events: opts.Events, Metrics: m,
		Notify: notify.Send, Log: opts.Log.WithName("drift"), LiveWorkers: opts.Concurrent,
		WriteBackTimeout: opts.WriteBackTimeout, InShard: inShard(mgr.GetAPIReader(), opts.WatchSelector),
	}
	clients, err := tenancy.NewClients(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()},
		opts.ImpersonationCacheSize)
	if err != nil {
		return nil, nil, err
	}
	gopts.Impersonation = impersonation{clients: clients, detector: detector}
	if opts.Audit != nil {
		gopts.Attributor = attribution.Audit{Store: opts.Audit, Mapper: mgr.GetRESTMapper()}
		// The mark is reflux's own statement, made as reflux, not as the
		// tenant: config/admission's reflux-manual-hotfix policy admits
		// the annotation from reflux and break-glass groups only, and the
		// object was just held as the tenant, so the tenant may touch it.
		gopts.Marker = HotfixMarker{Client: mgr.GetClient()}
	}
	gov, err := governor.New(gopts)
	if err != nil {
		return nil, nil, err
	}
	watcher.Handle(gov)
	if opts.Secrets == SecretsMetadata {
		secretsFromAudit(opts.Audit, gov, opts.Log)
	}
	return gov, watcher, nil
}

// SecretAccess is how reflux treats the Secrets Flux applies.
type SecretAccess string

const (
	// SecretsRead watches Secrets like any applied kind: drift is found
	// key by key and SOPS-encrypted back to Git. It needs get, list, watch
	// and patch on Secrets (the opt-in config/components/secrets).
	SecretsRead SecretAccess = "read"
	// SecretsMetadata never reads a Secret: Secret drift is reported from
	// the audit log (who wrote which declared Secret, when), never held
	// and never written. RBAC has no metadata-only read, so this is what
	// a profile without Secret access can know.
	SecretsMetadata SecretAccess = "metadata"
	// SecretsIgnore never watches Secrets and reports nothing of them.
	SecretsIgnore SecretAccess = "ignore"
)

// secretsFromAudit sends the audit log's Secret writes to the engine.
// Without the audit webhook reflux cannot see Secrets at all, which it
// says once, at start, naming the flag that would fix it.
func secretsFromAudit(store *audit.Store, gov *governor.Governor, log logr.Logger) {
	if store == nil {
		log.Info("Secret drift is not detected: --secrets=metadata reports it from the audit log, and no audit webhook is configured (--audit-addr)")
		return
	}
	attribution.SecretWrites(store, gov.OnAuditedSecretWrite)
}

func newBranchWriter(opts Options) (governor.Writer, error) {
	dir := opts.GitCacheDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "reflux-git")
	}
	var wbOpts []writeback.Option
	if opts.AllowInsecureHTTP {
		wbOpts = append(wbOpts, writeback.WithInsecureHTTP())
	}
	eng, err := writeback.New(dir, wbOpts...)
	if err != nil {
		return nil, fmt.Errorf("creating write-back engine: %w", err)
	}
	return &branches.Writer{Git: eng, Log: opts.Log.WithName("writeback")}, nil
}

// inShard tells the engine whether a Kustomization it does not govern is
// this shard's to clean up after: one the shard's selector selects (its
// policy went, say), or one that is gone. It reads the apiserver, since
// the cache holds only the shard's own Kustomizations.
func inShard(reader client.Reader, selector labels.Selector) func(context.Context, types.NamespacedName) (bool, error) {
	return func(ctx context.Context, id types.NamespacedName) (bool, error) {
		if selector == nil || selector.Empty() {
			return true, nil
		}
		ks := &kustomizev1.Kustomization{}
		if err := reader.Get(ctx, id, ks); err != nil {
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, fmt.Errorf("reading Kustomization %s: %w", id, err)
		}
		return selector.Matches(labels.Set(ks.Labels)), nil
	}
}
