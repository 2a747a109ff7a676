package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Writer writes drift sets to Git and checks their branches
// (reverse/writeback/branches.Writer).
type Writer interface {
	Write(ctx context.Context, set reverse.DriftSet) ([]reverse.BranchResult, error)
	Check(ctx context.Context, set reverse.DriftSet) (reverse.BranchCheck, error)
}

// Targets fills in where a Kustomization's drift is written: the
// GitRepository, its credentials, the signing key and the live Secrets the
// records name. Reading them is the cluster side's job.
type Targets interface {
	Resolve(ctx context.Context, g *reverse.Governed, set *reverse.DriftSet) error
}

// Engine is what the scheduler reads of the engine's earlier stages.
type Engine interface {
	// Snapshot returns a governed Kustomization's state.
	Snapshot(id types.NamespacedName) (reverse.Snapshot, bool)
	// AwaitingAttribution reports whether the writer of obj, governed by
	// id, is still awaited from the audit log.
	AwaitingAttribution(id types.NamespacedName, obj refluxv1.ObjectRef) bool
	// Busy reports whether the live path is working through a burst,
	// which write-back yields to (yield.go).
	Busy() bool
}

// Records applies a decision to a record (execute.Executor).
type Records interface {
	WithRecord(ctx context.Context, p *execute.Plan, fn func(rec *refluxv1.Drift) (decide.Decision, error)) error
}

var _ Records = &execute.Executor{}

// LiveStore reads the live watches' cache.
type LiveStore interface {
	Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool)
}

// Metrics counts write-backs (reverse/metrics.Metrics).
type Metrics interface {
	ObserveWriteBack(result string, took time.Duration)
	SetPending(ks types.NamespacedName, n int)
	SetPullRequests(ks types.NamespacedName, bc reverse.BranchCheck)
}

// Options wire a Scheduler. Writer, Targets, APIReader, Engine, Records,
// Live and Sealer are required.
type Options struct {
	Writer  Writer
	Targets Targets
	// APIReader reads records straight from the apiserver: the cache may
	// not show what the last run wrote a moment ago.
	APIReader client.Reader
	Engine    Engine
	Records   Records
	Live      LiveStore
	// Sealer proves the records acted on are reflux's.
	Sealer *record.Sealer
	// ClosedBy names who closed a record (evaluate.Evaluator.ClosedBy);
	// nil names nobody beyond what the record says.
	ClosedBy func(rec *refluxv1.Drift, c *refluxv1.DriftClosure) string
	Events   execute.EventRecorder
	Metrics  Metrics
	// Notify tells the Kustomization reconciler that a write-back ended.
	Notify func(types.NamespacedName)
	Log    logr.Logger
	Now    func() time.Time
	// Timeout bounds one write-back run, so a git server that accepts
	// connections and never answers stalls only its own repository's
	// worker, and only until the timeout; default 2m.
	Timeout time.Duration
}

// Scheduler runs write-back. Create it with New and run it with Start.
type Scheduler struct {
	opts Options
	wb   *workers

	mu     sync.Mutex
	states map[types.NamespacedName]*state
}

// New returns a Scheduler.
func New(opts Options) (*Scheduler, error) {
	if opts.Writer == nil || opts.Targets == nil || opts.APIReader == nil || opts.Engine == nil || opts.Records == nil ||
		opts.Live == nil || opts.Sealer == nil {
		return nil, errors.New("scheduler: Writer, Targets, APIReader, Engine, Records, Live and Sealer are required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Notify == nil {
		opts.Notify = func(types.NamespacedName) {}
	}
	s := &Scheduler{opts: opts, states: map[types.NamespacedName]*state{}}
	s.wb = newWorkers(s)
	return s, nil
}

// Start runs the workers until ctx ends, then waits for them.
func (s *Scheduler) Start(ctx context.Context) {
	s.wb.start()
	<-ctx.Done()
	s.wb.shutdown()
	s.wb.wait()
}

// Forget drops a Kustomization's write-back: its bookkeeping and what is
// queued for it.
func (s *Scheduler) Forget(id types.NamespacedName) {
	s.mu.Lock()
	delete(s.states, id)
	s.mu.Unlock()
	s.wb.forget(id)
}

// Status returns the outcome of a Kustomization's last write-back; nil
// when none ran.
func (s *Scheduler) Status(id types.NamespacedName) *WriteBackStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.states[id]
	if st == nil || st.last == nil {
		return nil
	}
	c := *st.last
	return &c
}

// stateLocked returns a Kustomization's bookkeeping, creating it. Its
// branches are unknown until checked: a restart may find one whose
// records all closed while reflux was down, which must not go on
// proposing them (issue 17), so the first report checks.
func (s *Scheduler) stateLocked(id types.NamespacedName) *state {
	st := s.states[id]
	if st == nil {
		st = &state{branches: true}
		s.states[id] = st
	}
	return st
}

func (s *Scheduler) now() time.Time { return s.opts.Now() }
