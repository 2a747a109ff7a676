package cli

import (
	"fmt"
	"os"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	crleaderelection "sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/reflux-dev/reflux/internal/handover"
)

// leaderElectionID names reflux's Lease.
const leaderElectionID = "reflux-leader-election"

// handoverLock is the leader lock of a replica that serves the audit
// webhook: it leaves a free lease to a peer that heard the audit log
// while no replica led (internal/handover), for three of the peers' retry
// periods, the longest a jittered elector waits between two tries and
// some. nil when leader election is off or no webhook is served, where
// controller-runtime builds its own lock.
func handoverLock(config *rest.Config, opts *ManagerOptions, listening *handover.Listening, log logr.Logger) (*handover.Lock, *lateRecorder, error) {
	if !opts.LeaderElection.Enable || opts.AuditAddr == "" {
		return nil, nil, nil
	}
	rec := &lateRecorder{}
	inner, err := crleaderelection.NewResourceLock(rest.CopyConfig(config), rec, crleaderelection.Options{
		LeaderElection:          true,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: os.Getenv("RUNTIME_NAMESPACE"),
		RenewDeadline:           opts.LeaderElection.RenewDeadline,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the leader election lock: %w", err)
	}
	return handover.NewLock(inner, listening, 3*opts.LeaderElection.RetryPeriod, log.WithName("handover")), rec, nil
}

// lateRecorder gives the lock, which the manager's options carry, the
// event recorder of the manager it is built before: the Lease's "became
// leader" events go out once bind has named the manager's provider.
type lateRecorder struct {
	mu       sync.Mutex
	provider recorder.Provider
}

func (l *lateRecorder) bind(p recorder.Provider) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.provider = p
}

// GetEventRecorderFor implements recorder.Provider.
func (l *lateRecorder) GetEventRecorderFor(name string) record.EventRecorder {
	return lateEvents{l: l, name: name}
}

// GetEventRecorder implements recorder.Provider; the lock does not use it.
func (l *lateRecorder) GetEventRecorder(name string) events.EventRecorder {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.provider == nil {
		return nil
	}
	return l.provider.GetEventRecorder(name)
}

// lateEvents drops what is recorded before bind: the lock records only
// once it leads, after the manager started.
type lateEvents struct {
	l    *lateRecorder
	name string
}

func (e lateEvents) get() record.EventRecorder {
	e.l.mu.Lock()
	defer e.l.mu.Unlock()
	if e.l.provider == nil {
		return nil
	}
	return e.l.provider.GetEventRecorderFor(e.name) //nolint:staticcheck // what resourcelock takes
}

func (e lateEvents) Event(object runtime.Object, eventtype, reason, message string) {
	if r := e.get(); r != nil {
		r.Event(object, eventtype, reason, message)
	}
}

func (e lateEvents) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if r := e.get(); r != nil {
		r.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

func (e lateEvents) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if r := e.get(); r != nil {
		r.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}

// leaderLock is lock as the manager's options take it: a nil *Lock must
// be a nil interface, or controller-runtime would use it.
func leaderLock(lock *handover.Lock) resourcelock.Interface {
	if lock == nil {
		return nil
	}
	return lock
}
