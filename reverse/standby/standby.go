package standby

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Governed is a Kustomization whose objects a leader would hold: opted
// in, selected by a policy that lets reflux hold, applied by Flux to this
// cluster.
type Governed struct {
	Ref refluxv1.KustomizationRef
	// Identity is whom holds go out as (reverse/tenancy.Identity); "" is
	// reflux's own.
	Identity string
	// Kinds are the kinds of Flux's inventory of it.
	Kinds []schema.GroupVersionKind
}

// Key returns the Kustomization's key.
func (g Governed) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: g.Ref.Namespace, Name: g.Ref.Name}
}

// Watches are a standby's own live watches (controllers.Watcher).
type Watches interface {
	Ensure(ks types.NamespacedName, gvks []schema.GroupVersionKind) error
	Forget(ks types.NamespacedName)
	Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool)
	Stop()
}

// Holder writes a hold (reverse/execute.Holder).
type Holder interface {
	Hold(ctx context.Context, obj refluxv1.ObjectRef, annotations map[string]string) (*unstructured.Unstructured, error)
}

// Options wire a Standby; every field but Log, Now and Held is required.
type Options struct {
	// Lease reads the leader election Lease.
	Lease func(context.Context) (Lease, error)
	// Governed lists what a leader would hold the objects of.
	Governed func(context.Context) ([]Governed, error)
	Watches  Watches
	// Writers tells which writers' writes Flux reverts (drift.Detector).
	Writers intake.Writers
	// HolderFor returns the Holder acting as identity.
	HolderFor func(identity string) (Holder, error)
	// Records reads Drift records, uncached: a hold is made only where
	// no record exists, which a cache that lags could not tell.
	Records client.Reader
	// Elected closes once this replica leads (manager.Elected).
	Elected <-chan struct{}
	// EngineCovers reports whether this replica's engine, once elected,
	// governs the Kustomization and has listed its kinds: the standby
	// leaves its objects to the engine from then on.
	EngineCovers func(Governed) bool
	// RenewDeadline is the leader election's; Poll is how often the
	// Lease and the Kustomizations are read (the retry period).
	RenewDeadline time.Duration
	Poll          time.Duration
	// MaxOverlap bounds how long a standby acts after its replica was
	// elected, for a Kustomization its engine never governs (one whose
	// source it cannot resolve); default 2 minutes.
	MaxOverlap time.Duration
	// Held counts the holds made; nil counts none.
	Held func()
	Log  logr.Logger
	Now  func() time.Time
}

// Standby watches the governed objects while its replica does not lead,
// and holds what Flux would revert while no replica does (package doc).
// It is a manager runnable that does not need the lease.
type Standby struct {
	opts  Options
	holds workqueue.TypedRateLimitingInterface[intake.Key]

	mu sync.Mutex
	// governed is what the last read of the Kustomizations found.
	governed map[types.NamespacedName]Governed
	// seen is when a change Flux would revert was last seen, per object,
	// for the changes that may become due (Due, Prune).
	seen    map[intake.Key]time.Time
	acting  bool
	elected bool

	// ensured are the kinds the watches were last given, per
	// Kustomization: the Start loop's own.
	ensured map[types.NamespacedName][]schema.GroupVersionKind
}

// New returns a Standby; Start runs it.
func New(opts Options) (*Standby, error) {
	if opts.Lease == nil || opts.Governed == nil || opts.Watches == nil || opts.Writers == nil ||
		opts.HolderFor == nil || opts.Records == nil || opts.Elected == nil || opts.EngineCovers == nil {
		return nil, errors.New("standby: Lease, Governed, Watches, Writers, HolderFor, Records, Elected and EngineCovers are required")
	}
	if opts.RenewDeadline <= 0 || opts.Poll <= 0 {
		return nil, errors.New("standby: RenewDeadline and Poll must be positive")
	}
	if opts.MaxOverlap <= 0 {
		opts.MaxOverlap = 2 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Held == nil {
		opts.Held = func() {}
	}
	return &Standby{opts: opts, holds: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[intake.Key](),
		workqueue.TypedRateLimitingQueueConfig[intake.Key]{Name: "reflux-standby"}),
		governed: map[types.NamespacedName]Governed{}, seen: map[intake.Key]time.Time{},
		ensured: map[types.NamespacedName][]schema.GroupVersionKind{}}, nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: a standby
// runs on every replica, and is of use only on those that do not lead.
func (s *Standby) NeedLeaderElection() bool { return false }

// holdWorkers hold in parallel: after a failover, every change of the
// gap becomes due at once.
const holdWorkers = 4

// Start runs the standby until ctx ends, or until its own replica leads
// and its engine has taken over.
func (s *Standby) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range holdWorkers {
		wg.Go(func() {
			for s.processHold(ctx) {
			}
		})
	}
	defer func() {
		s.holds.ShutDown()
		wg.Wait()
		s.opts.Watches.Stop()
	}()
	var elected time.Time
	var lease Observed
	// quiet is when the standby last saw a leader renew its lease while
	// it did not act itself: what became due when it starts is what came
	// after.
	var quiet time.Time
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		s.refresh(ctx)
		now := s.opts.Now()
		if l, err := s.opts.Lease(ctx); err != nil {
			// The apiserver is away, or refuses: the last read stands,
			// and a standby that never read one does not act.
			s.opts.Log.V(1).Info("reading the leader election Lease", "error", err.Error())
		} else {
			lease = Observe(lease, l, now)
		}
		if elected.IsZero() && closed(s.opts.Elected) {
			elected = now
		}
		st := State{Now: now, Lease: lease, Silence: s.opts.RenewDeadline + s.opts.Poll, Elected: !elected.IsZero()}
		if st.Elected {
			uncovered := s.uncovered()
			st.EngineReady = len(uncovered) == 0
			if !st.EngineReady && now.Sub(elected) > s.opts.MaxOverlap {
				s.opts.Log.Info("the engine of this replica has not taken these Kustomizations over in time: the standby stops anyway",
					"kustomizations", uncovered, "after", s.opts.MaxOverlap.String())
				st.EngineReady = true
			}
		}
		acting := Acting(st)
		s.step(acting, st.Elected, quiet, lease.Lease)
		if !acting && !st.Elected && lease.Known && lease.Lease.Holder != "" {
			quiet = lease.Changed
		}
		if st.Elected && st.EngineReady {
			s.opts.Log.Info("this replica leads and its engine watches what the standby watched: the standby stops")
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// step starts or stops acting, and queues what became due.
func (s *Standby) step(acting, elected bool, quiet time.Time, lease Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.elected = elected
	Prune(s.seen, s.opts.Now(), s.keep())
	switch {
	case acting && !s.acting:
		due := Due(s.seen, quiet, s.opts.Poll)
		s.opts.Log.Info("no replica leads: holding the changes Flux would revert until one has listed them",
			"leaseHolder", lease.Holder, "lastRenewalSeen", quiet, "due", len(due), "elected", elected)
		for _, k := range due {
			s.holds.Add(k)
		}
	case !acting && s.acting:
		s.opts.Log.Info("a replica leads again: the standby stops holding", "leaseHolder", lease.Holder)
	}
	s.acting = acting
}

// uncovered names the Kustomizations the standby stands by for that the
// engine of this replica has not taken over yet.
func (s *Standby) uncovered() []string {
	var out []string
	for _, g := range s.list() {
		if !s.opts.EngineCovers(g) {
			out = append(out, g.Key().String())
		}
	}
	sort.Strings(out)
	return out
}

// keep is how long a change stays due-able: the silence that makes a
// standby act, and reads of the Lease past the last renewal it may have
// followed.
func (s *Standby) keep() time.Duration { return s.opts.RenewDeadline + 4*s.opts.Poll }

// refresh reads what is governed and keeps the watches in step; a watch
// that could not start is tried again at the next read.
func (s *Standby) refresh(ctx context.Context) {
	govs, err := s.opts.Governed(ctx)
	if err != nil {
		s.opts.Log.V(1).Info("listing the governed Kustomizations", "error", err.Error())
		return
	}
	now := make(map[types.NamespacedName]Governed, len(govs))
	for _, g := range govs {
		now[g.Key()] = g
	}
	s.mu.Lock()
	s.governed = now
	s.mu.Unlock()
	for id := range s.ensured {
		if _, ok := now[id]; !ok {
			s.opts.Watches.Forget(id)
			delete(s.ensured, id)
		}
	}
	for id, g := range now {
		if kinds, ok := s.ensured[id]; ok && sameKinds(kinds, g.Kinds) {
			continue
		}
		if err := s.opts.Watches.Ensure(id, g.Kinds); err != nil {
			s.opts.Log.Info("watching the objects of a governed Kustomization", "kustomization", id.String(), "error", err.Error())
			delete(s.ensured, id)
			continue
		}
		s.ensured[id] = g.Kinds
	}
}

func (s *Standby) list() []Governed {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Governed, 0, len(s.governed))
	for _, g := range s.governed {
		out = append(out, g)
	}
	return out
}

func sameKinds(a, b []schema.GroupVersionKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// OnLiveAdd is the watches' add handler. An object listed while no
// replica leads, written by a writer Flux reverts and not held, is a
// change nobody else will hold in time; listed while a leader leads, it
// is that leader's.
func (s *Standby) OnLiveAdd(gvk schema.GroupVersionKind, cur *unstructured.Unstructured, seen time.Time) {
	if drift.Unreverted(cur) {
		return
	}
	if _, reverted := intake.Classify(s.opts.Writers, drift.Writers(nil, cur)); reverted {
		s.note(intake.KeyOf(gvk, cur), intake.OwnerOf(cur), seen, false)
	}
}

// OnLiveUpdate is the watches' update handler: a change Flux would revert
// is noted, and held at once while no replica leads. It runs on the
// informer's goroutine, so it never makes a request.
func (s *Standby) OnLiveUpdate(gvk schema.GroupVersionKind, old, cur *unstructured.Unstructured, seen time.Time) {
	if drift.Unreverted(cur) {
		return
	}
	// A removal leaves no writer behind (intake.OnLiveUpdate), and a
	// leader that lists the object would not take a hold of it for a
	// change: the standby holds only what names its writer.
	if _, reverted := intake.Classify(s.opts.Writers, drift.Writers(old, cur)); reverted {
		s.note(intake.KeyOf(gvk, cur), intake.OwnerOf(cur), seen, true)
	}
}

// OnLiveDelete is the watches' delete handler. A deletion cannot be held;
// the audit log tells the next leader of it (reverse/governor's replay).
func (s *Standby) OnLiveDelete(schema.GroupVersionKind, *unstructured.Unstructured) {}

// note keeps a change that may become due, and queues its hold while the
// standby acts; a listed object (keep false) only then.
func (s *Standby) note(k intake.Key, owner types.NamespacedName, seen time.Time, keep bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, governed := s.governed[owner]; !governed {
		return
	}
	if keep {
		s.seen[k] = seen
	}
	if s.acting {
		s.holds.Add(k)
	}
}

func (s *Standby) processHold(ctx context.Context) bool {
	k, shutdown := s.holds.Get()
	if shutdown {
		return false
	}
	defer s.holds.Done(k)
	if err := s.hold(ctx, k); err != nil && ctx.Err() == nil {
		s.opts.Log.Error(err, "holding a change while no replica leads", "object", k.String())
		if s.isActing() {
			s.holds.AddRateLimited(k)
			return true
		}
	}
	s.holds.Forget(k)
	return true
}

func (s *Standby) isActing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acting
}

// hold holds the object of k when the standby still acts, it is still
// not held, and no record of it exists.
func (s *Standby) hold(ctx context.Context, k intake.Key) error {
	live, ok := s.opts.Watches.Get(k.GVK, k.Namespace, k.Name)
	if !s.isActing() || !ok || drift.Unreverted(live) || live.GetDeletionTimestamp() != nil {
		return nil
	}
	s.mu.Lock()
	g, governed := s.governed[intake.OwnerOf(live)]
	elected := s.elected
	s.mu.Unlock()
	if !governed || elected && s.opts.EngineCovers(g) {
		// Gone from governance, or the engine of this replica, which
		// leads, has listed it: the engine decides.
		return nil
	}
	obj := intake.ObjectRef(k.GVK, live)
	name := record.Name(g.Ref, obj)
	rec := &refluxv1.Drift{}
	err := s.opts.Records.Get(ctx, client.ObjectKey{Namespace: g.Ref.Namespace, Name: name}, rec)
	switch {
	case err == nil:
		// A record, open or closed, is the next leader's to weigh, as
		// for the leader's own hold lane (execute.Prehold).
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading drift record %s/%s: %w", g.Ref.Namespace, name, err)
	}
	if !s.isActing() {
		return nil
	}
	holder, err := s.opts.HolderFor(g.Identity)
	if err != nil {
		return fmt.Errorf("impersonating %s: %w", g.Identity, err)
	}
	if _, err := holder.Hold(ctx, obj, refluxv1.HoldAnnotations(name, s.opts.Now(), false)); err != nil {
		return err
	}
	s.opts.Held()
	s.opts.Log.Info("held while no replica leads", "record", name, "object", k.String())
	return nil
}
