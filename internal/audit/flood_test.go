package audit

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestStoreIsBoundedUnderAFlood (issue 22 §2): writes to ever more
// objects, as a cluster's whole audit stream brings, keep at most the
// maximum, the newest first, and say how many went early.
func TestStoreIsBoundedUnderAFlood(t *testing.T) {
	g := NewWithT(t)
	now := at("2026-11-29T10:00:00Z")
	s := NewStore(WithMaxWrites(1000), WithClock(func() time.Time { return now }))
	for i := 0; i < 10_000; i++ {
		s.Record(ObjectKey{Resource: "leases", Namespace: "kube-system", Name: fmt.Sprintf("l%d", i)},
			Write{User: "kubelet", Time: now.Add(time.Duration(i) * time.Millisecond)})
	}
	g.Expect(s.Len()).To(Equal(1000))
	g.Expect(s.Evicted()).To(Equal(uint64(9000)))
	_, ok := s.Lookup(ObjectKey{Resource: "leases", Namespace: "kube-system", Name: "l9999"}, "", now.Add(time.Minute))
	g.Expect(ok).To(BeTrue(), "the newest write is kept")
	_, ok = s.Lookup(ObjectKey{Resource: "leases", Namespace: "kube-system", Name: "l0"}, "", now.Add(time.Minute))
	g.Expect(ok).To(BeFalse(), "the oldest went first")
	g.Expect(len(s.queue)-s.head).To(BeNumerically("<=", 1000+1024), "the queue is bounded too")
}

// TestOneHotObjectKeepsTheQueueBounded: one object written over and over
// keeps its newest writes, and the queue of the writes the per-object
// bound dropped does not grow for the whole TTL.
func TestOneHotObjectKeepsTheQueueBounded(t *testing.T) {
	g := NewWithT(t)
	now := at("2026-11-29T10:00:00Z")
	s := NewStore(WithPerObject(4), WithMaxWrites(100), WithClock(func() time.Time { return now }))
	key := ObjectKey{Resource: "leases", Namespace: "kube-system", Name: "kube-scheduler"}
	for i := 0; i < 10_000; i++ {
		s.Record(key, Write{User: fmt.Sprint(i), Time: now.Add(time.Duration(i) * time.Millisecond)})
	}
	g.Expect(len(s.queue) - s.head).To(BeNumerically("<=", 2*100))
	g.Expect(s.writes[key]).To(HaveLen(4))
	w, ok := s.Lookup(key, "", now.Add(time.Hour))
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("9999"))
	g.Expect(s.Evicted()).To(BeZero(), "only writes the per-object bound had dropped left the queue")
}

// TestStoreCountsStayTrue: whatever the mix of objects, repeats, the
// per-object bound, the TTL and the maximum, the store's count is the
// writes it holds, never over the maximum, and every write older than
// the TTL goes. FuzzStore explores more mixes.
func TestStoreCountsStayTrue(t *testing.T) {
	checkStore(t, 7, 20_000, 80)
}

// FuzzStore runs checkStore on fuzzed write sequences: `go test
// ./internal/audit -fuzz FuzzStore`.
func FuzzStore(f *testing.F) {
	f.Add(int64(7), uint16(2_000), uint8(80))
	f.Add(int64(1), uint16(500), uint8(1))
	f.Fuzz(func(t *testing.T, seed int64, writes uint16, objects uint8) {
		checkStore(t, seed, int(writes), int(objects)+1)
	})
}

// checkStore records writes, from a seeded random sequence over objects
// objects with times a little out of order, and checks the store's
// invariants after each.
func checkStore(t *testing.T, seed int64, writes, objects int) {
	t.Helper()
	g := NewWithT(t)
	rng := rand.New(rand.NewSource(seed))
	now := at("2026-11-29T10:00:00Z")
	s := NewStore(WithPerObject(3), WithMaxWrites(50), WithTTL(time.Minute), WithClock(func() time.Time { return now }))
	for i := 0; i < writes; i++ {
		now = now.Add(time.Duration(rng.Intn(40)) * time.Millisecond)
		// Stage timestamps arrive a little out of order.
		written := now.Add(-time.Duration(rng.Intn(500)) * time.Millisecond)
		s.Record(ObjectKey{Resource: "configmaps", Name: fmt.Sprintf("c%d", rng.Intn(objects))}, Write{Time: written})
		held := 0
		for _, list := range s.writes {
			g.Expect(list).NotTo(BeEmpty())
			g.Expect(len(list)).To(BeNumerically("<=", 3))
			held += len(list)
		}
		g.Expect(s.total).To(Equal(held), "after write %d", i)
		g.Expect(held).To(BeNumerically("<=", 50))
		g.Expect(len(s.queue) - s.head).To(BeNumerically("<=", 2*50+1))
	}
	now = now.Add(2 * time.Minute)
	s.Record(ObjectKey{Name: "last"}, Write{Time: now})
	g.Expect(s.Len()).To(Equal(1), "everything older than the TTL expired")
	g.Expect(s.total).To(Equal(1))
}

// BenchmarkRecordFlood is the cost of one write to a store already
// holding many objects' writes: constant, since expiry pops a queue.
func BenchmarkRecordFlood(b *testing.B) {
	for _, held := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			now := at("2026-11-29T10:00:00Z")
			s := NewStore(WithMaxWrites(held), WithClock(func() time.Time { return now }))
			for i := 0; i < held; i++ {
				s.Record(ObjectKey{Resource: "leases", Name: fmt.Sprintf("fill%d", i)}, Write{Time: now})
			}
			keys := make([]ObjectKey, 4096)
			for i := range keys {
				keys[i] = ObjectKey{Resource: "leases", Name: fmt.Sprintf("k%d", i)}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Record(keys[i%len(keys)], Write{Time: now})
			}
		})
	}
}

// TestKeepLeavesOutWhatIsNotWatched: writes to objects the engine does
// not watch are not among the store's writes (only in their own bound,
// TestRefusedWritesHaveTheirOwnBound), nor passed to Notify's
// subscribers.
func TestKeepLeavesOutWhatIsNotWatched(t *testing.T) {
	g := NewWithT(t)
	now := at("2026-11-29T10:00:00Z")
	s := NewStore(WithClock(func() time.Time { return now }))
	notified := 0
	s.Notify(func(ObjectKey, Write) { notified++ })
	s.Keep(func(k ObjectKey) bool { return k.APIGroup == "apps" && k.Resource == "deployments" })
	for i := 0; i < 1000; i++ {
		s.Record(ObjectKey{APIGroup: "coordination.k8s.io", Resource: "leases", Name: fmt.Sprint(i)}, Write{Time: now})
	}
	g.Expect(s.Len()).To(BeZero())
	s.Record(ObjectKey{APIGroup: "apps", Resource: "deployments", Namespace: "a", Name: "web"}, Write{User: "alice", Time: now})
	g.Expect(s.Len()).To(Equal(1))
	g.Expect(notified).To(Equal(1))
}

// TestDeletionsAreKeptWhateverIsWatched: a replica that does not lead
// watches nothing, so Keep refuses every write; the deletions are kept
// all the same, for DeletedSince to name when it takes over. Only the
// latest deletion after since counts.
func TestDeletionsAreKeptWhateverIsWatched(t *testing.T) {
	g := NewWithT(t)
	now := at("2026-11-29T10:00:00Z")
	s := NewStore(WithClock(func() time.Time { return now }))
	s.Keep(func(ObjectKey) bool { return false })
	cm := ObjectKey{Resource: "configmaps", Namespace: "apps", Name: "flags"}
	s.Record(cm, Write{User: "alice", Verb: "update", Time: now.Add(-3 * time.Minute)})
	s.Record(cm, Write{User: "alice", Verb: "delete", Time: now.Add(-2 * time.Minute)})
	s.Record(cm, Write{User: "bob", Verb: "delete", Time: now.Add(-time.Minute)})
	g.Expect(s.Writes()).To(Equal(2), "the update is not watched, the deletions are kept")

	w, ok := s.DeletedSince(cm, now.Add(-5*time.Minute))
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("bob"), "the latest")
	_, ok = s.DeletedSince(cm, now.Add(-30*time.Second))
	g.Expect(ok).To(BeFalse(), "none after since")
	_, ok = s.DeletedSince(ObjectKey{Resource: "configmaps", Namespace: "apps", Name: "other"}, now.Add(-5*time.Minute))
	g.Expect(ok).To(BeFalse())
}

// TestAWriteBeforeItsKindIsWatchedStillAnswers: a person edits an object
// a moment before reflux watches its kind (the Kustomization governed
// just after, a replica taking over). Keep refused the write then, and
// the lookup made once the kind is watched still names the person; a
// later write Keep accepted wins over it.
func TestAWriteBeforeItsKindIsWatchedStillAnswers(t *testing.T) {
	g := NewWithT(t)
	now := at("2026-11-29T10:00:00Z")
	s := NewStore(WithClock(func() time.Time { return now }))
	watched := false
	s.Keep(func(ObjectKey) bool { return watched })
	dep := ObjectKey{APIGroup: "apps", Resource: "deployments", Namespace: "a", Name: "web"}
	s.Record(dep, Write{User: "alice", FieldManager: "kubectl-edit", Time: now})
	g.Expect(s.Writes()).To(BeZero(), "refused: counted apart")

	watched = true
	w, ok := s.Lookup(dep, "kubectl-edit", now)
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("alice"))
	w, ok = s.Latest(dep, now, func(w Write) bool { return w.User != "flux" })
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("alice"))

	s.Record(dep, Write{User: "bob", FieldManager: "kubectl-edit", Time: now.Add(time.Minute)})
	w, _ = s.Lookup(dep, "kubectl-edit", now.Add(time.Minute))
	g.Expect(w.User).To(Equal("bob"), "the later write, kept")
	w, _ = s.Lookup(dep, "kubectl-edit", now)
	g.Expect(w.User).To(Equal("alice"), "at the first write's time, still the refused one")
}

// TestRefusedWritesHaveTheirOwnBound: a flood of writes to what is never
// watched fills only its own bound, and evicts none of the writes to
// what is.
func TestRefusedWritesHaveTheirOwnBound(t *testing.T) {
	g := NewWithT(t)
	now := at("2026-11-29T10:00:00Z")
	s := NewStore(WithMaxWrites(10), WithMaxRefused(100), WithClock(func() time.Time { return now }))
	s.Keep(func(k ObjectKey) bool { return k.Resource == "deployments" })
	dep := ObjectKey{APIGroup: "apps", Resource: "deployments", Namespace: "a", Name: "web"}
	s.Record(dep, Write{User: "alice", Time: now})
	for i := 0; i < 10_000; i++ {
		s.Record(ObjectKey{Resource: "leases", Name: fmt.Sprint(i)}, Write{Time: now})
	}
	g.Expect(s.Evicted()).To(BeZero(), "the kept writes were not evicted")
	g.Expect(s.refused.Writes()).To(Equal(100))
	g.Expect(s.refused.Evicted()).To(Equal(uint64(9_900)))
	_, ok := s.Lookup(ObjectKey{Resource: "leases", Name: "9999"}, "", now)
	g.Expect(ok).To(BeTrue(), "the newest refused write answers")
	_, ok = s.Lookup(ObjectKey{Resource: "leases", Name: "0"}, "", now)
	g.Expect(ok).To(BeFalse(), "the oldest went first")
	w, ok := s.Lookup(dep, "", now)
	g.Expect(ok).To(BeTrue())
	g.Expect(w.User).To(Equal("alice"))

	none := NewStore(WithMaxRefused(0))
	none.Keep(func(ObjectKey) bool { return false })
	none.Record(dep, Write{User: "alice", Time: now})
	_, ok = none.Lookup(dep, "", now)
	g.Expect(ok).To(BeFalse(), "WithMaxRefused(0) remembers none")
}
