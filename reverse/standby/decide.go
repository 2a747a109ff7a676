// Package standby holds live changes while no replica of reflux leads.
//
// A leader that dies takes its watches with it. The replica that takes
// over lists the governed objects only once it holds the lease and its
// engine has started, and an edit Flux reverted meanwhile is gone: no
// watch of the new leader saw it, and the audit log names its writer but
// not its values. Most of the soak's breaches were such edits (issue 22).
//
// A replica that does not lead therefore watches the governed objects
// too. Once the Lease shows that no leader renews it, it holds each
// change Flux would revert, as the leader's hold lane would: under the
// name the record will have, as the Kustomization's identity, and only
// where no record exists yet. The replica that leads next lists the held
// object as it lists its predecessor's holds, evaluates it, and keeps or
// releases the hold. A standby never writes a record, never dry-runs and
// never touches Git: a hold it should not have made costs an evaluation
// by the next leader, and nothing else.
package standby

import (
	"sort"
	"time"

	"github.com/reflux-dev/reflux/reverse/intake"
)

// Lease is what a standby last read of the leader election Lease.
type Lease struct {
	// Found is false when there is no Lease: no replica has led yet.
	Found bool
	// Holder is the identity of the replica holding it; "" once released.
	Holder string
	// Renewed is when the holder last renewed it, by the holder's clock.
	Renewed time.Time
}

// Observed is a standby's view of the Lease over time, by its own clock
// alone, as client-go's elector times a Lease: the replicas' clocks may
// differ, so the holder's renew time is only ever compared with itself.
type Observed struct {
	// Known is true once a read of the Lease succeeded: a standby that
	// cannot tell whether a leader leads never acts.
	Known bool
	Lease Lease
	// Changed is when this standby saw the Lease change (a renewal, a new
	// holder) last.
	Changed time.Time
}

// Observe folds a successful read of the Lease at now into o.
func Observe(o Observed, l Lease, now time.Time) Observed {
	if !o.Known || l != o.Lease {
		o.Changed = now
	}
	o.Known, o.Lease = true, l
	return o
}

// State is what a standby decides from whether it acts now.
type State struct {
	Now   time.Time
	Lease Observed
	// Silence is how long a Lease may go unrenewed before its holder is
	// taken to lead no more: the leader election's renew deadline, past
	// which client-go's elector gives up, and a retry period, the most
	// its last attempt may take.
	Silence time.Duration
	// Elected is true once this replica leads. Its own engine then takes
	// over, but only once it has listed what the standby watches
	// (EngineReady): until then, nothing else would hold.
	Elected     bool
	EngineReady bool
}

// Acting reports whether a standby holds the changes it sees.
func Acting(s State) bool {
	switch {
	case s.Elected:
		return !s.EngineReady
	case !s.Lease.Known:
		return false
	case !s.Lease.Lease.Found || s.Lease.Lease.Holder == "":
		return true
	}
	return s.Now.Sub(s.Lease.Changed) > s.Silence
}

// Due returns, in a stable order, the changes seen since the standby last
// saw the leader renew its lease (Observed.Changed), less margin, when it
// starts to act: the leader may have died without looking at them.
// Changes seen earlier were seen while a leader still renewed its lease
// and looked at its changes within milliseconds; holding them would undo
// its decisions. margin covers how stale the standby's read of the
// renewal may be. A zero renewal (no leader was ever seen) makes every
// change due.
func Due(seen map[intake.Key]time.Time, renewed time.Time, margin time.Duration) []intake.Key {
	from := renewed.Add(-margin)
	var out []intake.Key
	for k, at := range seen {
		if renewed.IsZero() || !at.Before(from) {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Prune drops the changes seen before now less keep: ones no later
// failover can make due, since a leader renewed its lease after them.
func Prune(seen map[intake.Key]time.Time, now time.Time, keep time.Duration) {
	for k, at := range seen {
		if now.Sub(at) > keep {
			delete(seen, k)
		}
	}
}
