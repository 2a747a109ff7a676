package manager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/controllers"
	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/reverse/attribution"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/source"
	"github.com/reflux-dev/reflux/reverse/tenancy"
	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/branches"
)

// newEngine builds the drift engine and the live watches that feed it.
// The engine reads the watches' stores and the watches hand it their
// events, so the Watcher is built first and handed the engine after.
func newEngine(mgr ctrl.Manager, opts Options, m *governor.Metrics, notify *notifier, renders governor.Renders) (*governor.Governor, *controllers.Watcher, error) {
	detector, err := newDetector(mgr, opts)
	if err != nil {
		return nil, nil, err
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
	watcher := controllers.NewWatcher(dyn, mgr.GetRESTMapper(), controllers.WatcherOptions{Namespace: opts.WatchNamespace,
		Namespaces: opts.WatchNamespaces, IgnoreSecrets: !readSecrets, Log: opts.Log.WithName("live")})
	gopts := governor.Options{
		Sealer: sealer,
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Detector: detector, Holder: controllers.Holder{Client: mgr.GetClient()},
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
		gopts.Marker = controllers.HotfixMarker{Client: mgr.GetClient()}
	}
	gov, err := governor.New(gopts)
	if err != nil {
		return nil, nil, err
	}
	watcher.Handle(gov)
	if opts.Audit != nil {
		keepAudited(opts.Audit, watcher, opts.Secrets == SecretsMetadata)
	}
	if opts.Secrets == SecretsMetadata {
		secretsFromAudit(opts.Audit, gov, opts.Log)
	}
	return gov, watcher, nil
}

// newDetector builds the drift detector with reflux's field managers and
// the comparison asked for: the in-process one reads the apiserver's
// OpenAPI schema through discovery.
func newDetector(mgr ctrl.Manager, opts Options) (*drift.Detector, error) {
	allowed := append(drift.DefaultAllowedManagers(), opts.AllowedManagers...)
	dopts := []drift.Option{drift.WithAllowedManagers(allowed...), drift.WithOverrideManagers(opts.OverrideManagers...)}
	if opts.Comparison == drift.ComparisonInProcess {
		dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return nil, fmt.Errorf("creating discovery client: %w", err)
		}
		dopts = append(dopts, drift.WithInProcessComparison(drift.NewOpenAPITypes(dc.OpenAPIV3())))
	}
	detector, err := drift.New(mgr.GetClient(), dopts...)
	if err != nil {
		return nil, fmt.Errorf("creating drift detector: %w", err)
	}
	return detector, nil
}

// keepAudited makes the audit store remember only writes to objects of
// the kinds reflux watches, and Secrets when their drift comes from the
// audit log alone: the apiserver sends every write of the cluster, and
// the rest must cost nothing that grows (issue 22 §2).
func keepAudited(store *audit.Store, watcher *controllers.Watcher, secrets bool) {
	store.Keep(func(k audit.ObjectKey) bool {
		if secrets && k.APIGroup == "" && k.Resource == "secrets" {
			return true
		}
		return watcher.Watches(schema.GroupResource{Group: k.APIGroup, Resource: k.Resource})
	})
}

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
