package audit

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// ObjectKey names an object as the audit log does: by API group and
// resource, not kind.
type ObjectKey struct {
	APIGroup  string
	Resource  string
	Namespace string
	Name      string
}

// Write is one successful write to an object.
type Write struct {
	// User is the authenticated (or impersonated) username.
	User string
	// Groups of the user.
	Groups []string
	// Impersonator is the authenticated user who acted as User, when the
	// request impersonated: kustomize-controller applying as a tenant's
	// ServiceAccount.
	Impersonator string
	// FieldManager from the request, when the client sent one.
	FieldManager string
	// Verb is update, patch, create or delete.
	Verb string
	// UserAgent of the client.
	UserAgent string
	// Time the apiserver completed the request.
	Time time.Time
	// Received is when the apiserver received the request; zero when the
	// event did not say. The object's managedFields time falls between
	// Received and Time, and a loaded apiserver can take seconds between
	// them: matching a change to its write compares with this one.
	Received time.Time
}

// began is when w's request began, as far as the event says: what the
// object's managedFields time can be compared with.
func (w Write) began() time.Time {
	if w.Received.IsZero() {
		return w.Time
	}
	return w.Received
}

// Store keeps the most recent writes per object for a bounded time, and at
// most a bounded number of writes in all. It is safe for concurrent use.
//
// The apiserver sends every write of the cluster, whatever reflux
// governs (leases, events, other controllers' objects), and a flood of
// them must cost each write the same, however many are remembered: writes
// expire from the front of a queue kept in arrival order, never by a scan
// of the whole store.
type Store struct {
	mu        sync.Mutex
	writes    map[ObjectKey][]stored
	perObject int
	ttl       time.Duration
	now       func() time.Time
	// queue holds each recorded write's object, number and time, in
	// arrival order from head; total counts the writes writes holds, at
	// most max; seq numbers them.
	queue   []queued
	head    int
	total   int
	max     int
	seq     uint64
	evicted uint64
	// notify are called with every write recorded (Notify).
	notify []func(ObjectKey, Write)
	// keep, when set, says which objects' writes are worth remembering.
	keep       func(ObjectKey) bool
	maxRefused int
	// refused remembers, within a budget of its own, the writes keep
	// refused: keep answers for the kinds watched now, and an object may
	// be watched a moment after it was written (a Kustomization governed
	// after the edit, a replica taking over). Its own budget keeps a
	// flood of writes to what is never watched from evicting the writes
	// to what is.
	refused *Store
}

// stored is a write with its number, which its queue entry names.
type stored struct {
	Write
	seq uint64
}

// queued is one recorded write, as the expiry queue knows it.
type queued struct {
	key  ObjectKey
	seq  uint64
	time time.Time
}

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithTTL sets how long writes are remembered. Drift is recorded within
// milliseconds of a change, so minutes are plenty.
func WithTTL(d time.Duration) StoreOption { return func(s *Store) { s.ttl = d } }

// WithPerObject bounds the writes remembered per object.
func WithPerObject(n int) StoreOption { return func(s *Store) { s.perObject = n } }

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) StoreOption { return func(s *Store) { s.now = now } }

// WithMaxWrites bounds the writes remembered in all: past it, the oldest
// go first, before their TTL.
func WithMaxWrites(n int) StoreOption { return func(s *Store) { s.max = n } }

// WithMaxRefused bounds the writes remembered that Keep refused
// (DefaultMaxRefused); zero remembers none.
func WithMaxRefused(n int) StoreOption { return func(s *Store) { s.maxRefused = n } }

// DefaultMaxRefused bounds the memory of the writes Keep refused (some
// 5 MiB): in a cluster of a few hundred writes a second, the minutes
// between an edit and its kind's watch starting; under a flood, less.
const DefaultMaxRefused = 20_000

// DefaultMaxWrites bounds the store's memory (a write is a few hundred
// bytes: some 50 MiB) under a flood: 200,000 writes is 20 s of 10,000
// writes a second, longer than a live change takes to be attributed. A
// quieter cluster keeps its writes for the whole TTL.
const DefaultMaxWrites = 200_000

// NewStore returns an empty store.
func NewStore(opts ...StoreOption) *Store {
	s := &Store{writes: map[ObjectKey][]stored{}, perObject: 16, ttl: 15 * time.Minute, now: time.Now, max: DefaultMaxWrites,
		maxRefused: DefaultMaxRefused}
	for _, o := range opts {
		o(s)
	}
	if s.maxRefused > 0 {
		s.refused = &Store{writes: map[ObjectKey][]stored{}, perObject: s.perObject, ttl: s.ttl, now: s.now, max: s.maxRefused}
	}
	return s
}

// Keep makes the store remember only writes to the objects keep accepts,
// from now on: the drift engine knows which kinds it watches once it
// runs, after the webhook was set up. The writes keep refuses are
// remembered apart, within their own bound (WithMaxRefused), and still
// answer lookups: a kind is watched only once a Kustomization that
// declares it is governed, which may be a moment after a person edited
// one of its objects. keep is called under the store's
// lock, for every write, and must be cheap. Deletions are remembered
// whatever keep says: a replica that does not lead watches nothing, and
// when it takes over, the deletions its predecessor saw and did not
// record before it lost its lease are known only here (DeletedSince).
func (s *Store) Keep(keep func(ObjectKey) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keep = keep
}

// Record remembers a write: apart, within their own bound, when Keep's
// function refuses its object.
func (s *Store) Record(key ObjectKey, w Write) {
	s.record(key, w, true)
}

// record is Record; without filter, whatever Keep says: the writes a
// cluster sent before its engine connected are replayed before that
// engine watches anything, so Keep would refuse them all.
func (s *Store) record(key ObjectKey, w Write, filter bool) {
	s.mu.Lock()
	if filter && s.keep != nil && w.Verb != "delete" && !s.keep(key) {
		s.mu.Unlock()
		if s.refused != nil {
			s.refused.record(key, w, false)
		}
		return
	}
	s.seq++
	list := append(s.writes[key], stored{Write: w, seq: s.seq})
	sort.SliceStable(list, func(i, j int) bool { return list[i].Time.Before(list[j].Time) })
	s.total++
	if len(list) > s.perObject {
		// The dropped writes' queue entries find nothing when popped.
		s.total -= len(list) - s.perObject
		list = list[len(list)-s.perObject:]
	}
	s.writes[key] = list
	s.queue = append(s.queue, queued{key: key, seq: s.seq, time: w.Time})
	s.expireLocked()
	notify := s.notify
	s.mu.Unlock()
	// Outside the lock: a subscriber may look the write up again.
	for _, fn := range notify {
		fn(key, w)
	}
}

// Notify calls fn with every write recorded from now on, on the webhook's
// request goroutine: fn must not block. It is how writes no watch sees
// (Secrets reflux may not read) reach the drift engine.
func (s *Store) Notify(fn func(ObjectKey, Write)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = append(slices.Clone(s.notify), fn)
}

// Lookup returns the latest write to key made at or before at (allowing a
// second of clock skew between apiserver and reflux, and for at's
// one-second resolution), made by fieldManager when it is not empty. A
// write is made when its request began: one a loaded apiserver completed
// seconds after it set the object's managedFields time still matches.
func (s *Store) Lookup(key ObjectKey, fieldManager string, at time.Time) (Write, bool) {
	w, ok := s.lookup(key, fieldManager, at)
	if s.refused == nil {
		return w, ok
	}
	r, rok := s.refused.lookup(key, fieldManager, at)
	return later(w, ok, r, rok)
}

func (s *Store) lookup(key ObjectKey, fieldManager string, at time.Time) (Write, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.writes[key]
	limit := at.Add(time.Second)
	for i := len(list) - 1; i >= 0; i-- {
		w := list[i].Write
		if w.began().After(limit) {
			continue
		}
		if fieldManager != "" && w.FieldManager != "" && w.FieldManager != fieldManager {
			continue
		}
		return w, true
	}
	return Write{}, false
}

// Latest returns the latest write to key at or before at (allowing a
// second of clock skew) that match accepts. It names the writer of a
// change no managedFields entry records, such as a removed field, where
// the caller's match leaves out its own writes and Flux's.
func (s *Store) Latest(key ObjectKey, at time.Time, match func(Write) bool) (Write, bool) {
	w, ok := s.latest(key, at, match)
	if s.refused == nil {
		return w, ok
	}
	r, rok := s.refused.latest(key, at, match)
	return later(w, ok, r, rok)
}

// later is the later of two lookups' answers: a write Keep refused and
// one it kept may both answer, for an object whose kind came to be
// watched between them.
func later(w Write, ok bool, r Write, rok bool) (Write, bool) {
	if !ok || (rok && r.Time.After(w.Time)) {
		return r, rok
	}
	return w, ok
}

func (s *Store) latest(key ObjectKey, at time.Time, match func(Write) bool) (Write, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.writes[key]
	limit := at.Add(time.Second)
	for i := len(list) - 1; i >= 0; i-- {
		if w := list[i].Write; !w.began().After(limit) && match(w) {
			return w, true
		}
	}
	return Write{}, false
}

// deleteWindow is how long before a watch saw a deletion the apiserver may
// have completed it: a watch event trails its request by well under a
// second, but an informer relisting after a disconnect learns of a
// deletion late.
const deleteWindow = 30 * time.Second

// LookupDelete returns the deletion of key the apiserver completed at or
// before at (allowing a second of clock skew), and not long before it.
func (s *Store) LookupDelete(key ObjectKey, at time.Time) (Write, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.writes[key]
	limit, floor := at.Add(time.Second), at.Add(-deleteWindow)
	for i := len(list) - 1; i >= 0; i-- {
		w := list[i].Write
		if w.Verb != "delete" || w.Time.After(limit) {
			continue
		}
		if w.Time.Before(floor) {
			break
		}
		return w, true
	}
	return Write{}, false
}

// DeletedSince returns when key was last deleted after since, if it
// was: the deletions a new leader replays (reverse/governor).
func (s *Store) DeletedSince(key ObjectKey, since time.Time) (Write, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.writes[key]
	for i := len(list) - 1; i >= 0; i-- {
		w := list[i].Write
		if w.Time.Before(since) {
			break
		}
		if w.Verb == "delete" {
			return w, true
		}
	}
	return Write{}, false
}

// Len returns the number of objects with remembered writes.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.writes)
}

// Writes returns the number of writes remembered: at most the store's
// maximum (WithMaxWrites, DefaultMaxWrites).
func (s *Store) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Evicted counts the writes dropped before their TTL because the store
// was full: the attribution of a change that old may then be unknown.
func (s *Store) Evicted() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evicted
}

// Unwatched returns the writes remembered apart because Keep refused
// them (WithMaxRefused), and those of them dropped before their TTL
// because that bound was full; zero when none are kept apart.
func (s *Store) Unwatched() (writes int, evicted uint64) {
	if s.refused == nil {
		return 0, 0
	}
	return s.refused.Writes(), s.refused.Evicted()
}

// expireLocked pops the front of the queue while its write is older than
// the TTL or the store holds more than its maximum, dropping that write
// (still there unless the per-object bound dropped it first). Each
// recorded write is queued once and popped once, so a write costs the
// same however many are remembered.
func (s *Store) expireLocked() {
	cutoff := s.now().Add(-s.ttl)
	for s.head < len(s.queue) {
		q := s.queue[s.head]
		// The queue counts too: writes the per-object bound dropped stay
		// queued until popped, and one object written all the time would
		// otherwise grow it for the whole TTL.
		full := s.max > 0 && (s.total > s.max || len(s.queue)-s.head > 2*s.max)
		if !full && !q.time.Before(cutoff) {
			break
		}
		s.head++
		list := s.writes[q.key]
		i := slices.IndexFunc(list, func(w stored) bool { return w.seq == q.seq })
		if i < 0 {
			continue
		}
		if full && !q.time.Before(cutoff) {
			s.evicted++
		}
		s.total--
		if len(list) == 1 {
			delete(s.writes, q.key)
			continue
		}
		s.writes[q.key] = slices.Delete(list, i, i+1)
	}
	// Reuse the queue's space once most of it was popped.
	if s.head > 1024 && s.head*2 > len(s.queue) {
		s.queue = append(s.queue[:0], s.queue[s.head:]...)
		s.head = 0
	}
}
