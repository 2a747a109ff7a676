package manager

import (
	"context"
	"fmt"
	"time"

	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/metrics"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/controllers"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/fleet"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/policy"
)

// Setup registers every reflux controller and the engine with mgr, and
// returns the engine (for tests and benchmarks to observe).
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) (*governor.Governor, error) {
	if opts.Concurrent < 1 {
		opts.Concurrent = 1
	}
	if opts.LiveWorkers < 1 {
		opts.LiveWorkers = DefaultLiveWorkers
	}
	recorder, m, err := newMetrics(opts)
	if err != nil {
		return nil, err
	}
	policies := &controllers.ReverseSyncPolicyReconciler{
		Client: mgr.GetClient(), Metrics: runtimectrl.NewMetrics(mgr, recorder), RetryInterval: opts.PolicyRetry,
		ForgeChecks: policy.NewForgeChecks(time.Now),
	}
	if err := policies.SetupWithManager(ctx, mgr, controllers.ReverseSyncPolicyReconcilerOptions{MaxConcurrentReconciles: opts.Concurrent}); err != nil {
		return nil, fmt.Errorf("setting up ReverseSyncPolicy controller: %w", err)
	}
	notify := newNotifier()
	fetcher := opts.Fetcher
	if fetcher == nil {
		fetcher = desired.NewFetcher(3, 256<<20, 1<<30)
	}
	renderer := desired.NewRenderer(fetcher, desired.RendererOptions{
		Workers: opts.RenderWorkers, RetryAfter: opts.ArtifactRetry, Observer: m, Done: notify.Send, Delay: opts.RenderDelay, Gate: opts.RenderGate,
		FluxVersion: opts.FluxVersion, BuildTimeout: opts.RenderTimeout, MaxFileSize: opts.RenderMaxFileSize, MaxLoadSize: opts.RenderMaxSize,
	})
	engines, err := newEngines(mgr, opts, m, notify, renderer)
	if err != nil {
		return nil, err
	}
	helmWatcher, err := engines.helmWatcher()
	if err != nil {
		return nil, err
	}
	gov, watcher, err := engines.newEngine(helmWatcher)
	if err != nil {
		return nil, err
	}
	// Uncached: workload identity reads a ServiceAccount and creates its
	// tokens, and reflux watches no ServiceAccounts.
	identityClient, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("creating the workload identity client: %w", err)
	}
	// Both fleets follow kubeconfigs as Flux does, and tell their own
	// reconciler of a cluster that stopped or started answering.
	fleetOptions := func(notify func(types.NamespacedName), name string) fleet.Options {
		return fleet.Options{KubeConfig: opts.KubeConfig, WorkloadIdentity: fleet.WorkloadIdentity{Client: identityClient, Cache: opts.TokenCache},
			ProbeInterval: opts.ClusterProbeInterval, Notify: notify, Log: opts.Log.WithName(name)}
	}
	remote := fleet.New(mgr.GetAPIReader(), engines.remote, fleetOptions(notify.Send, "fleet"))
	starts := []func(context.Context) error{gov.Start, notify.Start, remote.Start}
	if helmWatcher != nil {
		// HelmReleases that install into remote clusters have a fleet of
		// their own: a Kustomization and a HelmRelease may share a name.
		engines.helmRemote = fleet.New(mgr.GetAPIReader(), engines.remoteHelm, fleetOptions(engines.helmNotify.Send, "helm-fleet"))
		starts = append(starts, engines.helmRemote.Start)
	}
	for _, r := range append(starts, func(ctx context.Context) error {
		<-ctx.Done()
		watcher.Stop()
		if helmWatcher != nil {
			helmWatcher.Stop()
		}
		return nil
	}) {
		if err := mgr.Add(runnable(r)); err != nil {
			return nil, err
		}
	}
	if opts.Standby != nil {
		if err := addStandby(mgr, opts, gov, watcher); err != nil {
			return nil, err
		}
	}
	ks := &controllers.KustomizationReconciler{
		Client: mgr.GetClient(), Metrics: runtimectrl.NewMetrics(mgr, recorder), Governor: gov, Watcher: watcher, Remote: remote,
		Renderer: renderer, Drift: m, Events: opts.Events, APIReader: mgr.GetAPIReader(),
		RetryInterval: opts.ArtifactRetry, SlowRender: opts.SlowRender,
		DefaultServiceAccount: opts.DefaultServiceAccount, NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
	}
	if err := ks.SetupWithManager(mgr, controllers.KustomizationReconcilerOptions{
		MaxConcurrentReconciles: opts.Concurrent, Notifications: notify.out,
	}); err != nil {
		return nil, fmt.Errorf("setting up Kustomization controller: %w", err)
	}
	if helmWatcher != nil {
		hr := &controllers.HelmReleaseReconciler{Client: mgr.GetClient(), Governance: gov, Watcher: helmWatcher,
			Remote: engines.helmRemote, Requeue: engines.helmNotify.On, RetryInterval: opts.ArtifactRetry}
		if err := hr.SetupWithManager(mgr, controllers.HelmReleaseReconcilerOptions{MaxConcurrentReconciles: opts.Concurrent}); err != nil {
			return nil, fmt.Errorf("setting up HelmRelease controller: %w", err)
		}
	}
	return gov, nil
}

// newMetrics makes Flux's reconcile metrics and the engine's drift
// metrics, and registers both with opts.Registerer when it is set.
func newMetrics(opts Options) (*metrics.Recorder, *governor.Metrics, error) {
	recorder := metrics.NewRecorder()
	m, err := governor.NewMetrics(governor.WithTeamLabel(opts.TeamLabel))
	if err != nil {
		return nil, nil, fmt.Errorf("creating metrics: %w", err)
	}
	if opts.Registerer != nil {
		for _, c := range append(recorder.Collectors(), m.Collectors()...) {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, nil, fmt.Errorf("registering metrics: %w", err)
			}
		}
	}
	return recorder, m, nil
}

// runnable adapts a function to manager.Runnable.
type runnable func(context.Context) error

func (r runnable) Start(ctx context.Context) error { return r(ctx) }
