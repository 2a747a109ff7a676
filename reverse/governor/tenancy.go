package governor

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/reverse/tenancy"
)

// Impersonation gives the engine the Detector and Holder that act as an
// identity: a Kustomization's ServiceAccount, which kustomize-controller
// impersonates for every apply (reverse/tenancy). Getting them never makes
// a request, so the live path never waits on it.
type Impersonation interface {
	Detector(user string) (Detector, error)
	Holder(user string) (Holder, error)
}

// Denial is a live change the engine cannot evaluate or hold because the
// Kustomization's impersonated identity, or reflux's own when it names
// none, lacks a permission. The change is
// kept, without a hold, and evaluated again at the next resync or the
// object's next change.
type Denial struct {
	// Object names the object, Kind/namespace/name.
	Object string
	// Err is the permission the identity lacks.
	Err *tenancy.ForbiddenError
}

// detectorFor returns the Detector whose dry runs go out as the
// Kustomization's identity.
func (gv *Governor) detectorFor(g *Governed) (Detector, error) {
	if g.Identity == "" || gv.opts.Impersonation == nil {
		return gv.opts.Detector, nil
	}
	d, err := gv.opts.Impersonation.Detector(g.Identity)
	if err != nil {
		return nil, fmt.Errorf("impersonating %s: %w", g.Identity, err)
	}
	return d, nil
}

// holderFor returns the Holder whose holds and releases go out as user; ""
// is reflux's own identity.
func (x *executor) holderFor(user string) (Holder, error) {
	if user == "" || x.impersonation == nil {
		return x.holder, nil
	}
	h, err := x.impersonation.Holder(user)
	if err != nil {
		return nil, fmt.Errorf("impersonating %s: %w", user, err)
	}
	return h, nil
}

// deny records that a change failed because the Kustomization's identity
// (its ServiceAccount, or reflux itself) lacks a permission. It reports false when err is not such a refusal, so
// the caller retries it as any other error. Such a change is not retried
// with backoff: a missing permission does not come back by itself. It is
// not lost either: it stays on the live object (and a parked one stays
// parked), and the resync at the Kustomization's interval, or the
// object's next change, looks again.
func (gv *Governor) deny(owner types.NamespacedName, k objKey, err error) bool {
	gv.mu.Lock()
	e := gv.entries[owner]
	if e == nil {
		gv.mu.Unlock()
		return false
	}
	f, ok := tenancy.AsForbidden(err, e.gov.Identity)
	if !ok && e.gov.Identity == "" {
		// reflux acting as itself: its RBAC lists the kinds it may touch,
		// so a refusal is a grant missing, not a passing failure.
		f, ok = tenancy.AsOwnForbidden(err)
	}
	if !ok {
		gv.mu.Unlock()
		return false
	}
	if e.denied == nil {
		e.denied = map[objKey]denial{}
	}
	prev, seen := e.denied[k]
	e.denied[k] = denial{err: f}
	if p, ok := e.parked[k]; ok {
		// Parked, but its hold was refused: it is kept without one.
		p.held = false
		e.parked[k] = p
	}
	gv.mu.Unlock()
	if !seen || prev.err.Error() != f.Error() {
		msg := "cannot act as the Kustomization's ServiceAccount: change kept, not held"
		if f.Self {
			msg = "reflux's RBAC refuses what the change needs: change kept, not held"
		}
		gv.opts.Log.Error(f, msg, "kustomization", owner.String(), "object", k.String())
		gv.opts.Notify(owner)
	}
	return true
}

// allow forgets a denial once the object was handled.
func (gv *Governor) allow(owner types.NamespacedName, k objKey) {
	gv.mu.Lock()
	e := gv.entries[owner]
	_, was := e.deniedOf(k)
	if was {
		delete(e.denied, k)
	}
	gv.mu.Unlock()
	if was {
		gv.opts.Notify(owner)
	}
}

// denial is why an object's change could not be evaluated or held. The
// change itself stays where it is, on the live object: the next look at
// the object (its next change, or the resync) sees it there.
type denial struct {
	err *tenancy.ForbiddenError
}

func (e *entry) deniedOf(k objKey) (denial, bool) {
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
