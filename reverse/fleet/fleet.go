package fleet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

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
	// Ref is the first kubeconfig Secret the connection was made for,
	// for logs: Kustomizations naming other Secrets with the same
	// kubeconfig share it (Serves).
	Ref Ref
	// Config connects to the cluster as the kubeconfig says, sanitized
	// as kustomize-controller sanitizes it.
	Config *rest.Config
	// AuditToken is the token the cluster's audit events come with
	// (AuditTokenKey), empty when the Secret names none.
	AuditToken string
	// Serves reports whether Kustomizations naming ref are governed
	// through this connection now: whose records the engine may tidy up.
	Serves func(ref Ref) bool
}

// Build builds and starts the engine of a cluster; it runs until ctx
// ends. It must not wait on the cluster: an unreachable one still gets
// an engine, whose watches connect when the cluster answers.
type Build[E Engine] func(ctx context.Context, c Cluster) (E, error)

// Options tune a Fleet.
type Options struct {
	// KubeConfig are kustomize-controller's kubeconfig rules.
	KubeConfig runtimeclient.KubeConfigOptions
	// WorkloadIdentity connects through workload identity ConfigMaps
	// (spec.kubeConfig.configMapRef).
	WorkloadIdentity WorkloadIdentity
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

// Fleet keeps one engine per connection to a remote cluster in use, and
// which connection each governed remote Kustomization is assigned to. A
// connection is a kubeconfig, with its audit token: Kustomizations naming
// the same Secret, or Secrets holding the same kubeconfig (one copy per
// tenant namespace, as Flux needs them), share one engine and so one set
// of watches. Secrets with other credentials for the same cluster get
// engines of their own: the watches run as the identity they name.
type Fleet[E Engine] struct {
	reader client.Reader
	build  Build[E]
	opts   Options

	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// clusters are the connections, by their kubeconfig's fingerprint.
	clusters map[string]*cluster[E]
	// refs are the Secrets in use, and the fingerprint of the connection
	// each is on.
	refs     map[Ref]string
	assigned map[types.NamespacedName]Ref
}

// cluster is one connection's engine and what the fleet knows of it.
type cluster[E Engine] struct {
	engine      E
	fingerprint string
	cfg         *rest.Config
	// ctx is the engine's lifetime, which stop ends.
	ctx  context.Context
	stop context.CancelFunc
	// refs are the Secrets connected through it; users the
	// Kustomizations assigned to it, with the Secret each names.
	refs  map[Ref]bool
	users map[types.NamespacedName]Ref
	// down is why the last probe failed, nil while the cluster answers.
	down  error
	since time.Time
	// unread are the Secrets on it that the last probe could not read
	// again: only their Kustomizations are told, since the others'
	// Secrets, and the connection, are sound.
	unread map[Ref]unreadSecret
}

// unreadSecret is a kubeconfig Secret that cannot be read, since when.
type unreadSecret struct {
	err   error
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
		clusters: map[string]*cluster[E]{}, refs: map[Ref]string{}, assigned: map[types.NamespacedName]Ref{}}
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

// UnreachableError is a remote cluster that does not answer, or a
// kubeconfig Secret that can no longer be read.
type UnreachableError struct {
	Ref   Ref
	Since time.Time
	Err   error
	// Unread is a Secret that cannot be read again: the connection made
	// from what it held before goes on.
	Unread bool
}

func (e *UnreachableError) Error() string {
	since := e.Since.UTC().Format(time.RFC3339)
	if e.Unread {
		return fmt.Sprintf("the kubeconfig %s cannot be read since %s: %v; reflux goes on governing the "+
			"cluster with the kubeconfig it read before, which a rotation would no longer be seen in", e.Ref, since, e.Err)
	}
	return fmt.Sprintf("the remote cluster of %s does not answer since %s: %v; holds stay where they are, and what "+
		"changed meanwhile is found when it answers again", e.Ref, since, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// For assigns obj, a Kustomization or a HelmRelease, to its remote
// cluster's engine, connecting when obj is the first to use that
// kubeconfig, and lets go of obj in the engine it was assigned to before,
// if another. obj must be remote (RefOf). One Fleet serves one kind: the
// users are keyed by name alone.
func (f *Fleet[E]) For(ctx context.Context, obj client.Object) (Assignment[E], error) {
	ref, remote, err := RefOf(obj)
	if err != nil {
		return Assignment[E]{}, err
	}
	if !remote {
		return Assignment[E]{}, errors.New("fleet: Flux applies it to the local cluster")
	}
	id := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	f.mu.Lock()
	_, inUse := f.refs[ref]
	f.mu.Unlock()
	fingerprint := ""
	if !inUse {
		// The first Kustomization of a Secret reads its kubeconfig; the
		// probe reads it after, so a rotation is seen without it.
		kc, err := load(ctx, f.reader, ref)
		if err != nil {
			return Assignment[E]{}, err
		}
		if err := f.ensure(ctx, ref, kc); err != nil {
			return Assignment[E]{}, err
		}
		fingerprint = kc.fingerprint
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.refs[ref]; !ok && fingerprint != "" {
		if c, ok := f.clusters[fingerprint]; ok {
			f.refs[ref] = fingerprint
			c.refs[ref] = true
		}
	}
	if prev, ok := f.assigned[id]; ok && prev != ref {
		if was := f.clusterOfLocked(prev); was != nil && was == f.clusterOfLocked(ref) {
			// Another Secret with the same kubeconfig: the same engine
			// goes on governing it, with nothing to forget or close.
			delete(was.users, id)
			if !usesRef(was.users, prev) {
				delete(f.refs, prev)
				delete(was.refs, prev)
			}
		} else {
			f.releaseLocked(ctx, id, prev)
		}
	}
	// The connection may have been replaced (a rotation) since it was
	// read, or disconnected as idle: then this one connects again at its
	// next reconcile.
	c := f.clusterOfLocked(ref)
	if c == nil {
		return Assignment[E]{}, fmt.Errorf("the remote cluster of %s was disconnected while connecting to it; connecting again", ref)
	}
	f.assigned[id] = ref
	c.users[id] = ref
	out := Assignment[E]{Engine: c.engine, Ref: ref, Unreachable: c.unreachableLocked(ref)}
	return out, nil
}

// unreachableLocked is why the Kustomizations naming ref are not
// governed as they should be: the cluster does not answer, or ref cannot
// be read; nil when neither.
func (c *cluster[E]) unreachableLocked(ref Ref) *UnreachableError {
	if c.down != nil {
		return &UnreachableError{Ref: ref, Since: c.since, Err: c.down}
	}
	if u, ok := c.unread[ref]; ok {
		return &UnreachableError{Ref: ref, Since: u.since, Err: u.err, Unread: true}
	}
	return nil
}

// clusterOfLocked is the connection ref is on, nil if none.
func (f *Fleet[E]) clusterOfLocked(ref Ref) *cluster[E] {
	fp, ok := f.refs[ref]
	if !ok {
		return nil
	}
	return f.clusters[fp]
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
	c := f.clusterOfLocked(ref)
	if c == nil {
		return zero, false
	}
	return c.engine, true
}

// Forget lets go of id: its engine forgets it, and a connection no
// Kustomization uses any more is closed.
func (f *Fleet[E]) Forget(ctx context.Context, id types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ref, ok := f.assigned[id]; ok {
		f.releaseLocked(ctx, id, ref)
	}
}

// Clusters returns the kubeconfig Secrets connected, for tests.
func (f *Fleet[E]) Clusters() []Ref {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Ref, 0, len(f.refs))
	for ref := range f.refs {
		out = append(out, ref)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].String() < out[j].Namespace+"/"+out[j].String()
	})
	return out
}

// Connections is how many connections (engines) are open.
func (f *Fleet[E]) Connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.clusters)
}

// serves reports whether ref is on the connection fingerprint names.
func (f *Fleet[E]) serves(fingerprint string, ref Ref) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refs[ref] == fingerprint
}

// releaseLocked unassigns id from ref's engine.
func (f *Fleet[E]) releaseLocked(ctx context.Context, id types.NamespacedName, ref Ref) {
	delete(f.assigned, id)
	c := f.clusterOfLocked(ref)
	if c == nil {
		return
	}
	c.engine.Forget(ctx, id)
	delete(c.users, id)
	if !usesRef(c.users, ref) {
		// No Kustomization names the Secret now: it is read again, and
		// connected afresh, when one does.
		delete(f.refs, ref)
		delete(c.refs, ref)
	}
	if !f.disconnectIdleLocked(c) && len(c.users) == 0 {
		f.opts.Log.Info("remote cluster kept connected, with no governed Kustomization targeting it, until the holds "+
			"its engine owes a release are released", "cluster", ref.String(), "namespace", ref.Namespace)
	}
}

func usesRef(users map[types.NamespacedName]Ref, ref Ref) bool {
	for _, r := range users {
		if r == ref {
			return true
		}
	}
	return false
}

// disconnectIdleLocked disconnects c when no Kustomization uses it and
// its engine owes no release: stopping it earlier would leave the holds
// Forget handed to its owed releases in place for good.
func (f *Fleet[E]) disconnectIdleLocked(c *cluster[E]) bool {
	if len(c.users) > 0 || c.engine.Owing() > 0 || f.clusters[c.fingerprint] != c {
		return false
	}
	f.closeLocked(c)
	f.opts.Log.Info("remote cluster disconnected: no governed Kustomization targets it", "server", c.cfg.Host)
	return true
}

// closeLocked stops c's engine and forgets the connection.
func (f *Fleet[E]) closeLocked(c *cluster[E]) {
	c.stop()
	delete(f.clusters, c.fingerprint)
	for ref := range c.refs {
		if f.refs[ref] == c.fingerprint {
			delete(f.refs, ref)
		}
	}
}

// ensure connects kc, unless it is connected already, and starts its
// probe. Connecting asks the cluster, so it is done outside the lock: Of,
// which the record watch's handler calls, must never wait on a cluster
// that does not answer.
func (f *Fleet[E]) ensure(ctx context.Context, ref Ref, kc kubeconfig) error {
	f.mu.Lock()
	_, ok := f.clusters[kc.fingerprint]
	f.mu.Unlock()
	if ok {
		return nil
	}
	c, err := f.connect(ctx, ref, kc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.installLocked(ref, c)
	return nil
}

// installLocked makes c the connection for its kubeconfig and starts its
// probe, unless one was connected meanwhile, which c then gives way to.
// It returns the connection in use.
func (f *Fleet[E]) installLocked(ref Ref, c *cluster[E]) *cluster[E] {
	if in, ok := f.clusters[c.fingerprint]; ok {
		c.stop()
		return in
	}
	c.refs, c.users = map[Ref]bool{}, map[types.NamespacedName]Ref{}
	f.clusters[c.fingerprint] = c
	f.opts.Log.Info("remote cluster connected", "cluster", ref.String(), "namespace", ref.Namespace, "server", c.cfg.Host)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.watch(c.ctx, c)
	}()
	return c
}

// connect builds an engine for kc, first read from ref, without its
// probe.
func (f *Fleet[E]) connect(ctx context.Context, ref Ref, kc kubeconfig) (*cluster[E], error) {
	// Sanitizing asks the cluster whether it has flow control; an
	// unreachable one must not stall the reconciler for long.
	sctx, cancel := context.WithTimeout(ctx, f.opts.ProbeTimeout)
	defer cancel()
	cfg, err := restConfig(sctx, ref, kc, f.opts.KubeConfig, f.opts.WorkloadIdentity)
	if err != nil {
		return nil, err
	}
	ectx, stop := context.WithCancel(f.base)
	fp := kc.fingerprint
	engine, err := f.build(ectx, Cluster{Ref: ref, Config: rest.CopyConfig(cfg), AuditToken: kc.auditToken,
		Serves: func(r Ref) bool { return f.serves(fp, r) }})
	if err != nil {
		stop()
		return nil, fmt.Errorf("connecting to the remote cluster of %s: %w", ref, err)
	}
	return &cluster[E]{engine: engine, fingerprint: fp, cfg: cfg, ctx: ectx, stop: stop}, nil
}

// watch probes c until ctx ends, reporting a change of reachability, and
// moving the Secrets whose kubeconfig changed to their new connection.
func (f *Fleet[E]) watch(ctx context.Context, c *cluster[E]) {
	t := time.NewTicker(f.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		idle := f.disconnectIdleLocked(c)
		refs := make([]Ref, 0, len(c.refs))
		for ref := range c.refs {
			refs = append(refs, ref)
		}
		f.mu.Unlock()
		if idle {
			return
		}
		unread := map[Ref]error{}
		for _, ref := range refs {
			if err := f.rotated(ctx, ref, c); err != nil {
				unread[ref] = err
			}
		}
		if ctx.Err() != nil {
			return // closed: the last Secret moved to another connection
		}
		pctx, cancel := context.WithTimeout(ctx, f.opts.ProbeTimeout)
		err := f.opts.probe(pctx, c.cfg)
		cancel()
		if ctx.Err() != nil {
			return
		}
		f.setDown(c, err, unread)
	}
}

// setDown records the probe's outcome, the cluster's and each of its
// Secrets', and tells each Kustomization of c whose own state changed:
// one tenant's broken Secret says nothing of another's.
func (f *Fleet[E]) setDown(c *cluster[E], err error, unread map[Ref]error) {
	f.mu.Lock()
	before := map[types.NamespacedName]bool{}
	for id, ref := range c.users {
		before[id] = c.unreachableLocked(ref) != nil
	}
	changed := (c.down == nil) != (err == nil)
	if changed {
		c.since = time.Now()
	}
	c.down = err
	now := time.Now()
	var newlyUnread, readAgain []Ref
	next := map[Ref]unreadSecret{}
	for ref, uerr := range unread {
		u, was := c.unread[ref]
		if !was {
			u.since = now
			newlyUnread = append(newlyUnread, ref)
		}
		u.err = uerr
		next[ref] = u
	}
	for ref := range c.unread {
		if _, still := unread[ref]; !still {
			readAgain = append(readAgain, ref)
		}
	}
	c.unread = next
	var tell []types.NamespacedName
	for id, ref := range c.users {
		if (c.unreachableLocked(ref) != nil) != before[id] {
			tell = append(tell, id)
		}
	}
	f.mu.Unlock()
	switch {
	case changed && err != nil:
		f.opts.Log.Error(err, "remote cluster unreachable: holds stay, changes are found when it answers again",
			"server", c.cfg.Host)
	case changed:
		f.opts.Log.Info("remote cluster reachable again", "server", c.cfg.Host)
	}
	for _, ref := range newlyUnread {
		f.opts.Log.Error(unread[ref], "kubeconfig cannot be read: its Kustomizations go on with the connection made from what was "+
			"read before", "cluster", ref.String(), "namespace", ref.Namespace)
	}
	for _, ref := range readAgain {
		f.opts.Log.Info("kubeconfig read again", "cluster", ref.String(), "namespace", ref.Namespace)
	}
	for _, id := range tell {
		f.opts.Notify(id)
	}
}

// rotated reads ref's kubeconfig again and, when it changed, moves ref's
// Kustomizations from c to the connection of the new one, connecting it
// when none is. A Secret that cannot be read, or a new kubeconfig that
// cannot connect, keeps the connection it has and is returned, for the
// probe to report as the cluster being unreachable.
func (f *Fleet[E]) rotated(ctx context.Context, ref Ref, c *cluster[E]) error {
	kc, err := load(ctx, f.reader, ref)
	if err != nil {
		return err
	}
	if kc.fingerprint == c.fingerprint {
		return nil
	}
	f.mu.Lock()
	_, connected := f.clusters[kc.fingerprint]
	f.mu.Unlock()
	var next *cluster[E]
	if !connected {
		// Connected outside the lock, as in ensure.
		if next, err = f.connect(ctx, ref, kc); err != nil {
			return err
		}
	}
	f.mu.Lock()
	if f.refs[ref] != c.fingerprint || f.clusters[c.fingerprint] != c {
		// Let go of, or moved, meanwhile.
		f.mu.Unlock()
		if next != nil {
			next.stop()
		}
		return nil
	}
	to, ok := f.clusters[kc.fingerprint]
	switch {
	case ok && next != nil:
		next.stop() // connected meanwhile by another Kustomization
	case !ok && next == nil:
		// The connection it was to join closed meanwhile: the next
		// probe connects it.
		f.mu.Unlock()
		return nil
	case !ok:
		to = f.installLocked(ref, next)
	}
	moved := f.moveLocked(ctx, ref, c, to)
	f.mu.Unlock()
	f.opts.Log.Info("remote cluster reconnected: its kubeconfig changed", "cluster", ref.String(),
		"namespace", ref.Namespace)
	for _, id := range moved {
		f.opts.Notify(id)
	}
	return nil
}

// moveLocked moves ref and its Kustomizations from connection c to to,
// and returns them. When ref was c's last Secret, c stops without
// forgetting them: its holds and records are to's to carry on, as after a
// restart, and so are the releases it still owed (of a Kustomization gone
// just before); run beside its successor until done, it would have two
// engines handle the same live changes, and stopped with them it would
// leave those holds for good. Under the lock, no Forget adds one
// meanwhile. When c goes on serving other Secrets, it forgets the moved
// Kustomizations, as a reassignment does.
func (f *Fleet[E]) moveLocked(ctx context.Context, ref Ref, c, to *cluster[E]) []types.NamespacedName {
	last := len(c.refs) == 1
	var moved []types.NamespacedName
	for id, r := range c.users {
		if r != ref {
			continue
		}
		moved = append(moved, id)
		delete(c.users, id)
		to.users[id] = ref
		if !last {
			c.engine.Forget(ctx, id)
		}
	}
	delete(c.refs, ref)
	to.refs[ref] = true
	f.refs[ref] = to.fingerprint
	if last {
		to.engine.Owe(c.engine.Owed()...)
		f.closeLocked(c)
	}
	return moved
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
