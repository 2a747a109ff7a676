package manager

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/cache"
	runtimeclient "github.com/fluxcd/pkg/runtime/client"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// DefaultLiveWorkers is how many live changes are evaluated at once. A
// change costs a few apiserver round trips (the hold beside the record,
// then its status) and little CPU, so the workers mostly wait. After a
// failover the new leader's first list brings every change made while no
// replica led at once; the soak saw four workers take 20 s to hold such
// a backlog, and Flux reconciled first and erased some of it.
const DefaultLiveWorkers = 16

// Options wire reflux's controllers into a manager. The manager binary and
// the end-to-end tests share this one wiring.
type Options struct {
	// Concurrent is the number of parallel reconciles per controller.
	Concurrent int
	// LiveWorkers is the number of live changes evaluated in parallel;
	// DefaultLiveWorkers when zero.
	LiveWorkers int
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
	// AuditSenders, when set, routes the audit events of each remote
	// cluster to its engines by the token its Secret names
	// (fleet.AuditTokenKey).
	AuditSenders *audit.Senders
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
	// RenderTimeout is the time budget of one build
	// (desired.RendererOptions.BuildTimeout); default 10m.
	RenderTimeout time.Duration
	// RenderMaxFileSize and RenderMaxSize are the size budgets of one
	// build: the largest file it may read, and what it may read in all
	// (kustomize.BuildOptions MaxFileSize and MaxLoadSize); 0 is
	// kustomize's default.
	RenderMaxFileSize, RenderMaxSize int64
	// RenderDelay slows every render down on purpose, for tests
	// (desired.RendererOptions.Delay).
	RenderDelay time.Duration
	// RenderGate, when set, holds every render back before it builds,
	// for tests (see RendererOptions.Gate).
	RenderGate func(ctx context.Context) error
	// FluxVersion is the version of the kustomize-controller that applies
	// the governed Kustomizations; "" is kustomize.PairedFluxVersion.
	FluxVersion string
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
	// DefaultServiceAccount is kustomize-controller's and
	// helm-controller's --default-service-account: the ServiceAccount, in
	// a Kustomization's or HelmRelease's namespace, reflux acts as when the
	// object names none; empty acts as reflux itself.
	DefaultServiceAccount string
	// NoCrossNamespaceRefs is kustomize-controller's
	// --no-cross-namespace-refs: a Kustomization whose sourceRef points
	// into another namespace is refused.
	NoCrossNamespaceRefs bool
	// KubeConfig are kustomize-controller's rules for the kubeconfigs of
	// remote clusters (--insecure-kubeconfig-exec, --insecure-kubeconfig-tls).
	KubeConfig runtimeclient.KubeConfigOptions
	// ClusterProbeInterval is how often each remote cluster is probed, and
	// its kubeconfig Secret read again; default 10s.
	ClusterProbeInterval time.Duration
	// TokenCache keeps the workload identity tokens of remote clusters
	// named by spec.kubeConfig.configMapRef; nil asks for a token at
	// every request.
	TokenCache *cache.TokenCache
	// ImpersonationCacheSize bounds the impersonating clients kept, one
	// per tenant identity; default tenancy.DefaultCacheSize.
	ImpersonationCacheSize int
	// Registerer takes reflux's metrics; nil skips registration.
	Registerer prometheus.Registerer
	// Standby, when set, makes a replica that does not lead hold what
	// Flux would revert while no replica leads (reverse/standby).
	Standby *StandbyOptions
	Log     logr.Logger
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
