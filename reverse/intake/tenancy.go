package intake

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/reverse/tenancy"
)

// Denial is a live change the engine cannot evaluate or hold because the
// Kustomization's impersonated identity, or reflux's own when it names
// none, lacks a permission. The change is
// kept, without a hold, and evaluated again slowly (failed), at the next
// resync, or at the object's next change.
type Denial struct {
	// Object names the object, Kind/namespace/name.
	Object string
	// Err is the permission the identity lacks.
	Err *tenancy.ForbiddenError
}

// Deny records that a change failed because the Kustomization's identity
// (its ServiceAccount, or reflux itself) lacks a permission. It reports false when err is not such a refusal, so
// the caller retries it as any other error. Such a change is not lost: it
// stays on the live object (and a parked one stays parked), and the live
// queue looks at it again slowly (failed), as do the resync at the
// Kustomization's interval and the object's next change.
func (in *Intake) Deny(owner types.NamespacedName, k Key, err error) bool {
	in.mu.Lock()
	e := in.entries[owner]
	if e == nil {
		in.mu.Unlock()
		return false
	}
	f, ok := tenancy.AsForbidden(err, e.gov.Identity)
	if !ok && e.gov.Identity == "" {
		// reflux acting as itself: its RBAC lists the kinds it may touch,
		// so a refusal is a grant missing, not a passing failure.
		f, ok = tenancy.AsOwnForbidden(err)
	}
	if !ok {
		in.mu.Unlock()
		return false
	}
	if e.denied == nil {
		e.denied = map[Key]denial{}
	}
	prev, seen := e.denied[k]
	e.denied[k] = denial{err: f}
	if p, ok := e.parked[k]; ok {
		// Parked, but its hold was refused: it is kept without one.
		p.Held = false
		e.parked[k] = p
	}
	in.mu.Unlock()
	if !seen || prev.err.Error() != f.Error() {
		msg := "cannot act as the Kustomization's ServiceAccount: change kept, not held"
		if f.Self {
			msg = "reflux's RBAC refuses what the change needs: change kept, not held"
		}
		in.opts.Log.Error(f, msg, "kustomization", owner.String(), "object", k.String())
		in.opts.Notify(owner)
	}
	return true
}

// Allow forgets a denial once the object was handled.
func (in *Intake) Allow(owner types.NamespacedName, k Key) {
	in.mu.Lock()
	e := in.entries[owner]
	_, was := e.deniedOf(k)
	if was {
		delete(e.denied, k)
	}
	in.mu.Unlock()
	if was {
		in.opts.Notify(owner)
	}
}

// denial is why an object's change could not be evaluated or held. The
// change itself stays where it is, on the live object: the next look at
// the object (its next change, or the resync) sees it there.
type denial struct {
	err *tenancy.ForbiddenError
}

func (e *entry) deniedOf(k Key) (denial, bool) {
	if e == nil {
		return denial{}, false
	}
	d, ok := e.denied[k]
	return d, ok
}

// denials lists an entry's denials, by object.
func (e *entry) denials() []Denial {
	out := make([]Denial, 0, len(e.denied))
	for k, d := range e.denied {
		out = append(out, Denial{Object: k.String(), Err: d.err})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Object < out[j].Object })
	return out
}
