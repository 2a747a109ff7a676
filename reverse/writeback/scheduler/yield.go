package scheduler

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// maxYield bounds how long a write-back yields in one go, so drift still
// reaches Git while the live path never drains.
const maxYield = 30 * time.Second

// yields decides, from plain data, whether a due write-back waits for the
// live path: busy is whether the live path is working through a burst
// (intake.Busy), since is when this Kustomization's write-back began to
// yield (zero if it has not). A write-back's verification build, push,
// pull request and status writes took half of reflux's processor time
// during a burst of 1,000 edits, and its reads and writes shared the
// apiserver with the records the live path owes within seconds. Waiting
// costs write-back nothing it would keep: the records it finds once the
// burst is through go out in one commit rather than in several.
func yields(busy bool, since, now time.Time) bool {
	return busy && (since.IsZero() || now.Sub(since) < maxYield)
}

// yield reports whether id's write-back waits for the live path now, and
// keeps when it began to.
func (s *Scheduler) yield(id types.NamespacedName) bool {
	busy, now := s.opts.Engine.Busy(), s.now()
	s.mu.Lock()
	st := s.stateLocked(id)
	wait := yields(busy, st.yieldingSince, now)
	first := wait && st.yieldingSince.IsZero()
	switch {
	case first:
		st.yieldingSince = now
	case !wait:
		st.yieldingSince = time.Time{}
	}
	s.mu.Unlock()
	if first {
		s.opts.Log.Info("write-back waits for the live path's burst", "kustomization", id.String(), "atMost", maxYield.String())
	}
	return wait
}
