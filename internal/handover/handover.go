// Package handover decides which replica takes reflux's leader lease once
// it is free: one that heard the audit log through the whole leaderless
// gap before one that started during it.
//
// While no replica leads, nothing watches: a deletion made then is known
// only to the audit stores of the replicas that were listening, and Flux
// recreates the object at its next reconcile, after which no watch and
// no resync can tell it went. The replica that takes over replays the
// deletions its own store holds (reverse/governor's replay), so a replica
// restarted in the dead leader's place, whose store is empty, loses them
// when it wins the race for the lease, as it did after many of the soak's
// takeovers (issue 22 §1). Such a replica leaves the lease to a peer for a
// grace period, and takes it after, so a lone replica still leads.
package handover

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Listening is since when a replica's audit webhook has served; the zero
// value has not begun. It is safe for concurrent use.
type Listening struct {
	since atomic.Pointer[time.Time]
}

// Begin marks the webhook as serving from now on; later calls keep the
// first time.
func (l *Listening) Begin(now time.Time) { l.since.CompareAndSwap(nil, &now) }

// Since returns when the webhook began to serve, false before it did.
func (l *Listening) Since() (time.Time, bool) {
	if t := l.since.Load(); t != nil {
		return *t, true
	}
	return time.Time{}, false
}

// Yield reports whether a replica should leave a free lease to a peer
// for now, and for how much longer. renewed is when the last holder last
// renewed the lease (the start of the gap, as far as the lease knows);
// listening is since when this replica has heard the audit log, heard
// false if it has not begun; wanted is when this replica first found
// this lease free. A replica that was listening when the holder last
// renewed heard every deletion of the gap, so it never yields; one that
// was not yields until grace has passed since it first wanted the lease:
// a peer that heard the gap takes it meanwhile, if one is alive.
func Yield(renewed, listening time.Time, heard bool, wanted, now time.Time, grace time.Duration) (bool, time.Duration) {
	if heard && !listening.After(renewed) {
		return false, 0
	}
	left := grace - now.Sub(wanted)
	if left <= 0 {
		return false, 0
	}
	return true, left
}

// Lock is a leader-election lock that refuses to take a free lease while
// Yield says this replica should leave it to a peer. Renewing a lease it
// holds is never refused. It is a resourcelock.Interface for
// controller-runtime's manager (Options.LeaderElectionResourceLockInterface).
type Lock struct {
	resourcelock.Interface
	listening *Listening
	grace     time.Duration
	log       logr.Logger
	now       func() time.Time

	mu sync.Mutex
	// seen is the record the latest Get returned: Update takes the lease
	// from its holder.
	seen *resourcelock.LeaderElectionRecord
	// gap names the free lease this replica waits on (its last holder and
	// renewal), and wanted when it first found it free.
	gap    string
	wanted time.Time
	// yields counts the takes refused, for tests and the log.
	yields atomic.Int64
}

// NewLock wraps inner. grace is how long a replica that did not hear the
// gap leaves a free lease to its peers: a few of their retry periods, so
// that a peer's elector, which retries at a jittered period, has tried.
func NewLock(inner resourcelock.Interface, listening *Listening, grace time.Duration, log logr.Logger) *Lock {
	return &Lock{Interface: inner, listening: listening, grace: grace, log: log, now: time.Now}
}

// Get implements resourcelock.Interface, remembering the record for
// Update.
func (l *Lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.seen = nil
		return rec, raw, err
	}
	seen := *rec
	l.seen = &seen
	return rec, raw, nil
}

// Update implements resourcelock.Interface. It refuses to take the lease
// from another holder while Yield says so: the elector logs the error and
// tries again at its next retry.
func (l *Lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if err := l.admit(ler); err != nil {
		return err
	}
	if err := l.Interface.Update(ctx, ler); err != nil {
		return err
	}
	// The elector renews without a Get: what it wrote is what the lease
	// holds, so a renewal is never taken for a take from the last holder.
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = &ler
	return nil
}

// admit returns an error while this replica should leave the lease ler
// takes to a peer.
func (l *Lock) admit(ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.seen
	if seen == nil || seen.HolderIdentity == ler.HolderIdentity {
		return nil // a renewal, or a lease nobody held (Create)
	}
	now := l.now()
	gap := seen.HolderIdentity + "@" + seen.RenewTime.UTC().Format(time.RFC3339Nano)
	newGap := gap != l.gap
	if newGap {
		l.gap, l.wanted = gap, now
	}
	listening, heard := l.listening.Since()
	yield, left := Yield(seen.RenewTime.Time, listening, heard, l.wanted, now, l.grace)
	if !yield {
		return nil
	}
	l.yields.Add(1)
	if newGap {
		l.log.Info("leaving the free leader lease to a replica that heard the audit log while none led: this one began listening after the last leader renewed it",
			"lastHolder", seen.HolderIdentity, "renewed", seen.RenewTime.Time, "listeningSince", listening, "takingItIn", left.Round(time.Millisecond))
	}
	return fmt.Errorf("leaving the lease to a replica that heard the audit log while none led; taking it in %s if none does", left.Round(time.Millisecond))
}

// Yields returns how many takes of the lease this lock refused.
func (l *Lock) Yields() int64 { return l.yields.Load() }
