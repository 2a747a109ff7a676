package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/reflux-dev/reflux/controllers"
	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/reverse/attribution"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/fleet"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/helmlive"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/release"
	"github.com/reflux-dev/reflux/reverse/source"
	"github.com/reflux-dev/reflux/reverse/tenancy"
	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/branches"
)

// engines builds the drift engines: the hub's own, and one per remote
// cluster a governed Kustomization targets (issue 24). They share what is
// not a cluster's: the seal, the write-back, the renders, metrics and
// notifications. Records, conditions and events stay in the hub, beside
// the Kustomization, whichever cluster its objects live in.
type engines struct {
	mgr     ctrl.Manager
	opts    Options
	metrics *governor.Metrics
	notify  *notifier
	renders governor.Renders
	sealer  *record.Sealer
	writer  governor.Writer
	// hub is the hub's engine, once built: it governs the Kustomizations
	// that apply the HelmReleases remote Helm engines serve.
	hub *governor.Governor
	// helmRemote are the engines of the remote clusters HelmReleases
	// install in (spec.kubeConfig), once made.
	helmRemote *fleet.Fleet[*controllers.HelmEngine]
	// helmNotify asks the HelmRelease reconciler to report a HelmRelease
	// again: a watch of its objects refused or allowed in its cluster.
	helmNotify *relay
}

func newEngines(mgr ctrl.Manager, opts Options, m *governor.Metrics, notify *notifier, renders governor.Renders) (*engines, error) {
	writer := opts.Writer
	if writer == nil {
		var err error
		if writer, err = newBranchWriter(opts); err != nil {
			return nil, err
		}
	}
	sealer, err := record.NewSealer(opts.RecordKey)
	if err != nil {
		return nil, err
	}
	return &engines{mgr: mgr, opts: opts, metrics: m, notify: notify, renders: renders, sealer: sealer, writer: writer,
		helmNotify: &relay{}}, nil
}

// clusterSide is the cluster an engine watches, dry-runs, holds and
// releases in.
type clusterSide struct {
	config *rest.Config
	client client.Client
	mapper meta.RESTMapper
	// inShard tells which ungoverned Kustomizations' records the engine
	// may act on: never another cluster's.
	inShard func(context.Context, types.NamespacedName) (bool, error)
	// audit attributes the cluster's writes; nil attributes none.
	audit *audit.Store
	// helm watches the objects of governed HelmReleases; nil governs
	// none (helmlive).
	helm *controllers.Watcher
	// storage reads Helm's release Secrets, uncached.
	storage client.Reader
	// helmCluster and helmGovernance are governor.HelmOptions': nil for
	// the hub's engine.
	helmCluster    func(*helmv2.HelmRelease) (string, bool)
	helmGovernance helmlive.Governance
	log            logr.Logger
}

// local is the hub's own side: the manager's connection, and the audit
// webhook's store.
func (e *engines) local() clusterSide {
	return clusterSide{config: e.mgr.GetConfig(), client: e.mgr.GetClient(), mapper: e.mgr.GetRESTMapper(),
		inShard: inShard(e.mgr.GetAPIReader(), e.opts.WatchSelector, nil), audit: e.opts.Audit,
		storage: e.mgr.GetAPIReader(), log: e.opts.Log}
}

// newEngine builds the hub's drift engine and the live watches that feed
// it, with helm, when set, watching the objects of governed HelmReleases.
func (e *engines) newEngine(helm *controllers.Watcher) (*governor.Governor, *controllers.Watcher, error) {
	side := e.local()
	side.helm = helm
	if w, ok := e.writer.(*branches.Writer); ok && helm != nil {
		// A values change is verified through the chart of the release
		// helm-controller last made, read where it installed it.
		w.Values = valuesVerifier{hub: e.verifier(side), helmReleases: e.mgr.GetClient(), remote: e.helmEngineOf}
	}
	gov, watcher, err := e.build(side)
	e.hub = gov
	return gov, watcher, err
}

// helmEngineOf is the engine of the remote cluster the HelmRelease id
// installs in, once it is connected.
func (e *engines) helmEngineOf(id types.NamespacedName) (*controllers.HelmEngine, bool) {
	if e.helmRemote == nil {
		return nil, false
	}
	return e.helmRemote.Of(id)
}

// verifier renders values changes with the releases side's Helm storage
// holds.
func (e *engines) verifier(side clusterSide) helmlive.Verifier {
	return helmlive.Verifier{HelmReleases: e.mgr.GetClient(), Storage: side.storage, ClusterScoped: chart.ClusterScopedBy(side.mapper)}
}

// valuesVerifier verifies a values change with the release of the cluster
// helm-controller installed it in.
type valuesVerifier struct {
	hub          helmlive.Verifier
	helmReleases client.Reader
	// remote returns the engine of the remote cluster a HelmRelease
	// installs in, once connected.
	remote func(id types.NamespacedName) (*controllers.HelmEngine, bool)
}

func (v valuesVerifier) VerifyValues(ctx context.Context, id types.NamespacedName, set []chart.Setting, want []chart.Wanted) error {
	hr := &helmv2.HelmRelease{}
	if err := v.helmReleases.Get(ctx, id, hr); err != nil {
		return fmt.Errorf("reading HelmRelease %s: %w", id, err)
	}
	if hr.Spec.KubeConfig == nil {
		return v.hub.VerifyValues(ctx, id, set, want)
	}
	if eng, ok := v.remote(id); ok {
		return eng.Verifier.VerifyValues(ctx, id, set, want)
	}
	return fmt.Errorf("HelmRelease %s is installed in a remote cluster reflux is not connected to yet", id)
}

// helmWatcher returns the live watches of HelmReleases' objects in the
// hub, or nil when helm-controller's CRDs are not installed there: the
// HelmRelease controller could never start then.
func (e *engines) helmWatcher() (*controllers.Watcher, error) {
	gk := schema.GroupKind{Group: helmv2.GroupVersion.Group, Kind: helmv2.HelmReleaseKind}
	if _, err := e.mgr.GetRESTMapper().RESTMapping(gk, helmv2.GroupVersion.Version); err != nil {
		if meta.IsNoMatchError(err) {
			e.opts.Log.Info("helm-controller's CRDs are not installed: the objects of HelmReleases are not governed", "kind", gk.String())
			return nil, nil
		}
		return nil, fmt.Errorf("looking up %s: %w", gk, err)
	}
	return e.newHelmWatcher(e.mgr.GetConfig(), e.mgr.GetRESTMapper(), e.opts.Log)
}

// newHelmWatcher returns the live watches of HelmReleases' objects in
// the cluster config connects to.
func (e *engines) newHelmWatcher(config *rest.Config, mapper meta.RESTMapper, log logr.Logger) (*controllers.Watcher, error) {
	config = rest.CopyConfig(config)
	config.Timeout = 0 // watches last as long as the engine
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	readSecrets := e.opts.Secrets == "" || e.opts.Secrets == SecretsRead
	return controllers.NewWatcher(dyn, mapper, controllers.WatcherOptions{Namespace: e.opts.WatchNamespace,
		Namespaces: e.opts.WatchNamespaces, IgnoreSecrets: !readSecrets, Selector: helmlive.NameLabel,
		Log: log.WithName("helm-live")}), nil
}

// remote builds and starts the engine of a remote cluster (fleet.Build):
// it runs until ctx ends. Nothing in it waits on the cluster: its REST
// mapper discovers kinds when a watch first needs them.
func (e *engines) remote(ctx context.Context, c fleet.Cluster) (*controllers.Engine, error) {
	side, err := e.remoteSide(c)
	if err != nil {
		return nil, err
	}
	gov, watcher, err := e.start(ctx, c, side)
	if err != nil {
		return nil, err
	}
	return &controllers.Engine{Governor: gov, Watcher: watcher}, nil
}

// remoteHelm builds and starts the engine of a remote cluster HelmReleases
// install in (fleet.Build): its watches select helm-controller's labels,
// it reads Helm's storage there and holds there, and it reads the state
// of the Kustomizations that apply the HelmReleases from the hub's
// engine, which governs them. Their records stay in the hub.
func (e *engines) remoteHelm(ctx context.Context, c fleet.Cluster) (*controllers.HelmEngine, error) {
	if e.hub == nil {
		return nil, errors.New("the hub's engine is not built yet")
	}
	side, err := e.remoteSide(c)
	if err != nil {
		return nil, err
	}
	if side.helm, err = e.newHelmWatcher(side.config, side.mapper, side.log); err != nil {
		return nil, err
	}
	side.helmGovernance = e.hub
	side.helmCluster = func(hr *helmv2.HelmRelease) (string, bool) {
		ref, remote, err := fleet.RefOf(hr)
		if err != nil || !remote || !c.Serves(ref) {
			return "", false
		}
		return ref.String(), true
	}
	gov, _, err := e.start(ctx, c, side)
	if err != nil {
		return nil, err
	}
	helm := side.helm
	go func() {
		<-ctx.Done()
		helm.Stop()
	}()
	helm.OnAccessChange(e.helmNotify.Send)
	return &controllers.HelmEngine{Engine: controllers.Engine{Governor: gov, Watcher: helm}, Verifier: e.verifier(side)}, nil
}

// remoteSide connects to a remote cluster: nothing in it waits on the
// cluster, whose REST mapper discovers kinds when a watch first needs
// them.
func (e *engines) remoteSide(c fleet.Cluster) (clusterSide, error) {
	httpClient, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return clusterSide{}, fmt.Errorf("building the HTTP client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(c.Config, httpClient)
	if err != nil {
		return clusterSide{}, fmt.Errorf("building the REST mapper: %w", err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: e.mgr.GetScheme(), Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		return clusterSide{}, fmt.Errorf("building the client: %w", err)
	}
	log := e.opts.Log.WithValues("cluster", c.Ref.String(), "clusterNamespace", c.Ref.Namespace, "server", c.Config.Host)
	return clusterSide{config: c.Config, client: cl, mapper: mapper, storage: cl,
		inShard: inShard(e.mgr.GetAPIReader(), e.opts.WatchSelector, c.Serves), log: log}, nil
}

// start builds the engine of a remote cluster over side, with the
// cluster's audit store when its Secret names a token, and runs it until
// ctx ends.
func (e *engines) start(ctx context.Context, c fleet.Cluster, side clusterSide) (*governor.Governor, *controllers.Watcher, error) {
	log := side.log
	switch {
	case c.AuditToken != "" && e.opts.AuditSenders != nil:
		// The cluster's own store: its writes are never the hub's, nor
		// another cluster's, whatever they share in names.
		side.audit = audit.NewStore()
	case c.AuditToken != "":
		log.Info("the kubeconfig Secret names an audit token, but reflux serves no audit webhook (--audit-addr): " +
			"changes in the cluster are attributed to no user")
	}
	gov, watcher, err := e.build(side)
	if err != nil {
		return nil, nil, err
	}
	release := func() {}
	if side.audit != nil {
		// Registering hands the store what the cluster sent before
		// reflux connected.
		release = e.opts.AuditSenders.Register(c.AuditToken, side.audit)
		log.Info("attributing the cluster's changes from the audit events its apiserver sends with the Secret's audit-token")
	}
	// A watch refused or allowed again in the remote cluster changes the
	// Drifted condition of the Kustomizations using its kind, as in the hub.
	watcher.OnAccessChange(e.notify.Send)
	go func() {
		_ = gov.Start(ctx)
	}()
	go func() {
		<-ctx.Done()
		watcher.Stop()
		release()
	}()
	return gov, watcher, nil
}

// build builds an engine over side.
func (e *engines) build(side clusterSide) (*governor.Governor, *controllers.Watcher, error) {
	opts := e.opts
	detector, err := newDetector(side.config, side.client, opts)
	if err != nil {
		return nil, nil, err
	}
	// Watches last as long as the engine: the connection's timeout, which
	// kustomize-controller's kubeconfig rules set for its requests, would
	// end each one after it.
	watchConfig := rest.CopyConfig(side.config)
	watchConfig.Timeout = 0
	dyn, err := dynamic.NewForConfig(watchConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	readSecrets := opts.Secrets == "" || opts.Secrets == SecretsRead
	watcher := controllers.NewWatcher(dyn, side.mapper, controllers.WatcherOptions{Namespace: opts.WatchNamespace,
		Namespaces: opts.WatchNamespaces, IgnoreSecrets: !readSecrets, OwnerOf: intake.OwnerOf, Log: side.log.WithName("live")})
	gopts := governor.Options{
		Sealer: e.sealer,
		Client: e.mgr.GetClient(), APIReader: e.mgr.GetAPIReader(), Objects: side.storage, Detector: detector, Holder: controllers.Holder{Client: side.client},
		Live: watcher, Renders: e.renders, Writer: e.writer, Targets: source.Targets{Reader: e.mgr.GetAPIReader()}, Events: opts.Events,
		Metrics: e.metrics, Notify: e.notify.Send, Log: side.log.WithName("drift"), LiveWorkers: opts.LiveWorkers,
		WriteBackTimeout: opts.WriteBackTimeout, InShard: side.inShard,
	}
	clients, err := tenancy.NewClients(side.config, client.Options{Scheme: e.mgr.GetScheme(), Mapper: side.mapper},
		opts.ImpersonationCacheSize)
	if err != nil {
		return nil, nil, err
	}
	gopts.Impersonation = impersonation{clients: clients, detector: detector}
	if side.audit != nil {
		audited := attribution.Audit{Store: side.audit, Mapper: side.mapper}
		gopts.Attributor, gopts.Deletions = audited, audited
		// The mark is reflux's own statement, made as reflux, not as the
		// tenant: config/admission's reflux-manual-hotfix policy admits
		// the annotation from reflux and break-glass groups only, and the
		// object was just held as the tenant, so the tenant may touch it.
		gopts.Marker = controllers.HotfixMarker{Client: side.client}
	}
	if side.helm != nil {
		owners, err := drift.New(side.client, drift.WithFieldOwner(release.FieldOwner))
		if err != nil {
			return nil, nil, err
		}
		det, err := release.New(side.client)
		if err != nil {
			return nil, nil, err
		}
		gopts.Helm = &governor.HelmOptions{Live: side.helm, HelmReleases: e.mgr.GetClient(), Storage: side.storage,
			Scoper: side.client, Detector: det, DetectorFor: impersonation{clients: clients}.ReleaseDetector, Owners: owners,
			ClusterScoped: chart.ClusterScopedBy(side.mapper), DefaultServiceAccount: opts.DefaultServiceAccount,
			Workers: opts.LiveWorkers, Cluster: side.helmCluster, Governance: side.helmGovernance}
	}
	gov, err := governor.New(gopts)
	if err != nil {
		return nil, nil, err
	}
	watcher.Handle(gov)
	if side.helm != nil {
		side.helm.Handle(gov.Helm())
	}
	if side.audit != nil {
		keepAudited(side.audit, opts.Secrets == SecretsMetadata, watcher, side.helm)
	}
	if opts.Secrets == SecretsMetadata {
		// The hub's audit log or a remote cluster's own (its Secret's
		// audit-token): either way the only word of its Secret writes.
		secretsFromAudit(side.audit, gov, side.log)
	}
	return gov, watcher, nil
}

// newDetector builds the drift detector with reflux's field managers and
// the comparison asked for: the in-process one reads the apiserver's
// OpenAPI schema through discovery.
func newDetector(config *rest.Config, cl client.Client, opts Options) (*drift.Detector, error) {
	allowed := append(drift.DefaultAllowedManagers(), opts.AllowedManagers...)
	dopts := []drift.Option{drift.WithAllowedManagers(allowed...), drift.WithOverrideManagers(opts.OverrideManagers...)}
	if opts.Comparison == drift.ComparisonInProcess {
		dc, err := discovery.NewDiscoveryClientForConfig(config)
		if err != nil {
			return nil, fmt.Errorf("creating discovery client: %w", err)
		}
		dopts = append(dopts, drift.WithInProcessComparison(drift.NewOpenAPITypes(dc.OpenAPIV3())))
	}
	detector, err := drift.New(cl, dopts...)
	if err != nil {
		return nil, fmt.Errorf("creating drift detector: %w", err)
	}
	return detector, nil
}

// keepAudited makes the audit store remember writes to objects of the
// kinds reflux watches, and Secrets when their drift comes from the audit
// log alone: the apiserver sends every write of the cluster, and the
// rest must cost nothing that grows (issue 22 §2). The rest are kept
// within a small bound of their own, for a kind watched only after its
// object was edited.
func keepAudited(store *audit.Store, secrets bool, watchers ...*controllers.Watcher) {
	store.Keep(func(k audit.ObjectKey) bool {
		if secrets && k.APIGroup == "" && k.Resource == "secrets" {
			return true
		}
		gr := schema.GroupResource{Group: k.APIGroup, Resource: k.Resource}
		for _, w := range watchers {
			if w != nil && w.Watches(gr) {
				return true
			}
		}
		return false
	})
}

// secretsFromAudit sends the audit log's Secret writes to the engine.
// Without the audit webhook reflux cannot see Secrets at all, which it
// says once, at start, naming the flag that would fix it.
func secretsFromAudit(store *audit.Store, gov *governor.Governor, log logr.Logger) {
	if store == nil {
		log.Info("Secret drift is not detected: --secrets=metadata reports it from the audit log, and no audit webhook is " +
			"configured (--audit-addr) or, for a remote cluster, its kubeconfig Secret names no " + fleet.AuditTokenKey)
		return
	}
	attribution.SecretWrites(store, gov.OnAuditedSecretWrite)
}

// newBranchWriter is the default Writer: signed branches (reverse/branches)
// over one cached clone per repository in opts.GitCacheDir.
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

// inShard tells an engine whether a Kustomization it does not govern is
// its to clean up after: one this shard's selector selects (its policy
// went, say) and that Flux applies to the engine's cluster, or one that is
// gone, which is the hub's engine's alone. serves says which kubeconfig
// Secrets a remote engine's connection serves (fleet.Cluster.Serves); nil
// is the hub's engine. It reads the apiserver, since the cache holds only
// the shard's own Kustomizations.
func inShard(reader client.Reader, selector labels.Selector, serves func(fleet.Ref) bool) func(context.Context, types.NamespacedName) (bool, error) {
	hub := serves == nil
	return func(ctx context.Context, id types.NamespacedName) (bool, error) {
		ks := &kustomizev1.Kustomization{}
		if err := reader.Get(ctx, id, ks); err != nil {
			if apierrors.IsNotFound(err) {
				return hub, nil
			}
			return false, fmt.Errorf("reading Kustomization %s: %w", id, err)
		}
		ref, remote, err := fleet.RefOf(ks)
		switch {
		case err != nil:
			// Governed by no engine: what it left is the hub's to clean.
			return hub, nil
		case !remote && !hub, remote && (hub || !serves(ref)):
			return false, nil
		}
		return selector == nil || selector.Empty() || selector.Matches(labels.Set(ks.Labels)), nil
	}
}
