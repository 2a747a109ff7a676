package fleet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	runtimeclient "github.com/fluxcd/pkg/runtime/client"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/reverse/owed"
)

// Engine is one cluster's drift engine, as the fleet runs it. It runs
// until the context it was built with ends.
type Engine interface {
	// Forget ends the engine's governance of a Kustomization: its
	// watches go, and the holds it took before evaluation are owed their
	// release.
	Forget(ctx context.Context, id types.NamespacedName)
	// Owing is how many of those releases are not done yet; the fleet
	// keeps the engine until none is.
	Owing() int
	// Owed lists them, and Owe takes over those of the engine it
	// replaces when the kubeconfig rotates.
	Owed() []owed.Release
	Owe(rs ...owed.Release)
}

// Cluster is what an engine is built for.
type Cluster struct {
	Ref Ref
	// Config connects to the cluster as the kubeconfig says, sanitized
	// as kustomize-controller sanitizes it.
	Config *rest.Config
	// AuditToken is the token the cluster's audit events come with
	// (AuditTokenKey), empty when the Secret names none.
	AuditToken string
}

// Build builds and starts the engine of a cluster; it runs until ctx
// ends. It must not wait on the cluster: an unreachable one still gets
// an engine, whose watches connect when the cluster answers.
type Build[E Engine] func(ctx context.Context, c Cluster) (E, error)

// Options tune a Fleet.
type Options struct {
	// KubeConfig are kustomize-controller's kubeconfig rules.
	KubeConfig runtimeclient.KubeConfigOptions
	// ProbeInterval is how often each cluster is probed, and its
	// kubeconfig read again; default 10s.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe; default 5s.
	ProbeTimeout time.Duration
	// Notify is called with each Kustomization whose cluster became
	// unreachable, reachable again, or was reconnected with a rotated
	// kubeconfig, so its reconciler reports it and publishes it to the
	// new engine. It must not block.
	Notify func(types.NamespacedName)
	Log    logr.Logger
	// probe replaces the cluster probe, for tests.
	probe func(ctx context.Context, cfg *rest.Config) error
}

// Fleet keeps one engine per remote cluster in use, and which cluster
// each governed remote Kustomization is assigned to.
type Fleet[E Engine] struct {
	reader client.Reader
	build  Build[E]
	opts   Options

	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	clusters map[Ref]*cluster[E]
	assigned map[types.NamespacedName]Ref
}

// cluster is one remote cluster's engine and what the fleet knows of it.
type cluster[E Engine] struct {
	engine      E
	fingerprint string
	cfg         *rest.Config
	// ctx is the engine's lifetime, which stop ends.
	ctx   context.Context
	stop  context.CancelFunc
	users map[types.NamespacedName]bool
	// down is why the last probe failed, nil while the cluster answers.
	down  error
	since time.Time
}

// New returns a Fleet that reads kubeconfig Secrets with reader (an
// uncached reader of the hub: reflux does not cache Secrets) and builds
// engines with build. Start runs it.
func New[E Engine](reader client.Reader, build Build[E], opts Options) *Fleet[E] {
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = 10 * time.Second
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = 5 * time.Second
	}
	if opts.Notify == nil {
		opts.Notify = func(types.NamespacedName) {}
	}
	if opts.probe == nil {
		opts.probe = probe
	}
	if opts.KubeConfig.UserAgent == "" {
		// As reflux's own connection: the audit log of the remote
		// cluster tells reflux's requests apart by it, as the hub's does.
		opts.KubeConfig.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	base, cancel := context.WithCancel(context.Background())
	return &Fleet[E]{reader: reader, build: build, opts: opts, base: base, cancel: cancel,
		clusters: map[Ref]*cluster[E]{}, assigned: map[types.NamespacedName]Ref{}}
}

// Start runs until ctx ends, then stops every engine. It implements
// manager.Runnable: engines run only while this reflux leads.
func (f *Fleet[E]) Start(ctx context.Context) error {
	<-ctx.Done()
	f.cancel()
	f.wg.Wait()
	return nil
}

// Assignment is the engine that governs a Kustomization.
type Assignment[E Engine] struct {
	Engine E
	Ref    Ref
	// Unreachable is why the cluster does not answer, nil while it does.
	// The engine is kept: its holds stay, and its watches catch up with
	// what changed meanwhile when the cluster answers again.
	Unreachable *UnreachableError
}

// UnreachableError is a remote cluster that does not answer.
type UnreachableError struct {
	Ref   Ref
	Since time.Time
	Err   error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the remote cluster of %s does not answer since %s: %v; holds stay where they are, and what "+
		"changed meanwhile is found when it answers again", e.Ref, e.Since.UTC().Format(time.RFC3339), e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// For assigns ks to its remote cluster's engine, building the engine when
// ks is the first to target that cluster, and lets go of ks in the engine
// it was assigned to before, if another. ks must be remote (RefOf).
func (f *Fleet[E]) For(ctx context.Context, ks *kustomizev1.Kustomization) (Assignment[E], error) {
	ref, remote, err := RefOf(ks)
	if err != nil {
		return Assignment[E]{}, err
	}
	if !remote {
		return Assignment[E]{}, errors.New("fleet: the Kustomization is applied to the local cluster")
	}
	id := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	f.mu.Lock()
	_, ok := f.clusters[ref]
	f.mu.Unlock()
	if !ok {
		// The first Kustomization of a cluster reads its kubeconfig;
		// the probe reads it after, so a rotation is seen without it.
		kc, err := load(ctx, f.reader, ref)
		if err != nil {
			return Assignment[E]{}, err
		}
		if err := f.ensure(ctx, ref, kc); err != nil {
			return Assignment[E]{}, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev, ok := f.assigned[id]; ok && prev != ref {
		f.releaseLocked(ctx, id, prev)
	}
	// The cluster may have been rebuilt (a rotation) since it was read,
	// or disconnected by another Kustomization's going: then this one
	// connects it again at its next reconcile.
	c, ok := f.clusters[ref]
	if !ok {
		return Assignment[E]{}, fmt.Errorf("the remote cluster of %s was disconnected while connecting to it; connecting again", ref)
	}
	f.assigned[id] = ref
	c.users[id] = true
	out := Assignment[E]{Engine: c.engine, Ref: ref}
	if c.down != nil {
		out.Unreachable = &UnreachableError{Ref: ref, Since: c.since, Err: c.down}
	}
	return out, nil
}

// Of returns the engine ks is assigned to, if it is remote.
func (f *Fleet[E]) Of(id types.NamespacedName) (E, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var zero E
	ref, ok := f.assigned[id]
	if !ok {
		return zero, false
	}
	c, ok := f.clusters[ref]
	if !ok {
		return zero, false
	}
	return c.engine, true
}

// Forget lets go of id: its engine forgets it, and a cluster no
// Kustomization targets any more is disconnected.
func (f *Fleet[E]) Forget(ctx context.Context, id types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ref, ok := f.assigned[id]; ok {
		f.releaseLocked(ctx, id, ref)
	}
}

// Clusters returns the remote clusters connected, for metrics and tests.
func (f *Fleet[E]) Clusters() []Ref {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Ref, 0, len(f.clusters))
	for ref := range f.clusters {
		out = append(out, ref)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// releaseLocked unassigns id from ref's engine.
func (f *Fleet[E]) releaseLocked(ctx context.Context, id types.NamespacedName, ref Ref) {
	delete(f.assigned, id)
	c, ok := f.clusters[ref]
	if !ok {
		return
	}
	c.engine.Forget(ctx, id)
	delete(c.users, id)
	if !f.disconnectIdleLocked(ref, c) && len(c.users) == 0 {
		f.opts.Log.Info("remote cluster kept connected, with no governed Kustomization targeting it, until the holds "+
			"its engine owes a release are released", "cluster", ref.String(), "namespace", ref.Namespace)
	}
}

// disconnectIdleLocked disconnects c when no Kustomization targets it and
// its engine owes no release: stopping it earlier would leave the holds
// Forget handed to its owed releases in place for good.
func (f *Fleet[E]) disconnectIdleLocked(ref Ref, c *cluster[E]) bool {
	if len(c.users) > 0 || c.engine.Owing() > 0 || f.clusters[ref] != c {
		return false
	}
	c.stop()
	delete(f.clusters, ref)
	f.opts.Log.Info("remote cluster disconnected: no governed Kustomization targets it", "cluster", ref.String(),
		"namespace", ref.Namespace)
	return true
}

// ensure connects ref's cluster, building its engine from kc, unless it
// was connected meanwhile, and starts its probe. Connecting asks the cluster, so it
// is done outside the lock: Of, which the record watch's handler calls,
// must never wait on a cluster that does not answer.
func (f *Fleet[E]) ensure(ctx context.Context, ref Ref, kc kubeconfig) error {
	c, err := f.connect(ctx, ref, kc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.clusters[ref]; ok {
		// Another Kustomization connected it meanwhile.
		c.stop()
		return nil
	}
	c.users = map[types.NamespacedName]bool{}
	f.clusters[ref] = c
	f.startProbeLocked(ref, c)
	return nil
}

// connect builds an engine for ref from kc, without its probe.
func (f *Fleet[E]) connect(ctx context.Context, ref Ref, kc kubeconfig) (*cluster[E], error) {
	// Sanitizing asks the cluster whether it has flow control; an
	// unreachable one must not stall the reconciler for long.
	sctx, cancel := context.WithTimeout(ctx, f.opts.ProbeTimeout)
	defer cancel()
	cfg, err := restConfig(sctx, ref, kc, f.opts.KubeConfig)
	if err != nil {
		return nil, err
	}
	ectx, stop := context.WithCancel(f.base)
	engine, err := f.build(ectx, Cluster{Ref: ref, Config: rest.CopyConfig(cfg), AuditToken: kc.auditToken})
	if err != nil {
		stop()
		return nil, fmt.Errorf("connecting to the remote cluster of %s: %w", ref, err)
	}
	return &cluster[E]{engine: engine, fingerprint: kc.fingerprint, cfg: cfg, ctx: ectx, stop: stop}, nil
}

// startProbeLocked starts probing c, the engine now in use for ref.
func (f *Fleet[E]) startProbeLocked(ref Ref, c *cluster[E]) {
	f.opts.Log.Info("remote cluster connected", "cluster", ref.String(), "namespace", ref.Namespace, "server", c.cfg.Host)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.watch(c.ctx, ref, c)
	}()
}

// watch probes c until ctx ends, reporting a change of reachability and
// reconnecting when the kubeconfig Secret changes.
func (f *Fleet[E]) watch(ctx context.Context, ref Ref, c *cluster[E]) {
	t := time.NewTicker(f.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		idle := f.disconnectIdleLocked(ref, c)
		f.mu.Unlock()
		if idle {
			return
		}
		if f.rotated(ctx, ref, c) {
			return // the new engine has its own probe
		}
		pctx, cancel := context.WithTimeout(ctx, f.opts.ProbeTimeout)
		err := f.opts.probe(pctx, c.cfg)
		cancel()
		if ctx.Err() != nil {
			return
		}
		f.setDown(ref, c, err)
	}
}

// setDown records the probe's outcome, and tells c's Kustomizations when
// it changes whether the cluster answers.
func (f *Fleet[E]) setDown(ref Ref, c *cluster[E], err error) {
	f.mu.Lock()
	changed := (c.down == nil) != (err == nil)
	if changed {
		c.since = time.Now()
	}
	c.down = err
	users := keys(c.users)
	f.mu.Unlock()
	if !changed {
		return
	}
	if err != nil {
		f.opts.Log.Error(err, "remote cluster unreachable: holds stay, changes are found when it answers again",
			"cluster", ref.String(), "namespace", ref.Namespace)
	} else {
		f.opts.Log.Info("remote cluster reachable again", "cluster", ref.String(), "namespace", ref.Namespace)
	}
	for _, id := range users {
		f.opts.Notify(id)
	}
}

// rotated reads ref's kubeconfig again and, when it changed, replaces c
// with an engine built from the new one, and reports true. A Secret that
// cannot be read keeps the engine it has: the reason is logged and
// reported as the cluster being unreachable.
func (f *Fleet[E]) rotated(ctx context.Context, ref Ref, c *cluster[E]) bool {
	kc, err := load(ctx, f.reader, ref)
	if err != nil {
		if ctx.Err() == nil {
			f.setDown(ref, c, err)
		}
		return false
	}
	if kc.fingerprint == c.fingerprint {
		return false
	}
	// Connected outside the lock, as in ensure.
	next, err := f.connect(ctx, ref, kc)
	if err != nil {
		f.setDown(ref, c, err)
		return false
	}
	f.mu.Lock()
	if f.clusters[ref] != c {
		// Disconnected meanwhile: no Kustomization targets it any more.
		f.mu.Unlock()
		next.stop()
		return true
	}
	// The old engine stops without forgetting: its holds and records
	// are the new engine's to carry on, as after a restart. So are the
	// releases it still owed (of a Kustomization gone just before): run
	// beside its successor until done, it would have two engines handle
	// the same live changes, and stopped with them it would leave those
	// holds for good. Under the lock, no Forget adds one meanwhile.
	next.users = c.users
	next.engine.Owe(c.engine.Owed()...)
	c.stop()
	f.clusters[ref] = next
	f.startProbeLocked(ref, next)
	users := keys(next.users)
	f.mu.Unlock()
	f.opts.Log.Info("remote cluster reconnected: its kubeconfig Secret changed", "cluster", ref.String(),
		"namespace", ref.Namespace)
	for _, id := range users {
		f.opts.Notify(id)
	}
	return true
}

func keys(m map[types.NamespacedName]bool) []types.NamespacedName {
	out := make([]types.NamespacedName, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// probe asks the cluster its version: any authenticated user may, so a
// failure is the cluster or the credentials, not RBAC.
func probe(ctx context.Context, cfg *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	return dc.RESTClient().Get().AbsPath("/version").Do(ctx).Error()
}
