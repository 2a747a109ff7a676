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
}

// Store keeps the most recent writes per object for a bounded time. It is
// safe for concurrent use.
type Store struct {
	mu        sync.Mutex
	writes    map[ObjectKey][]Write
	perObject int
	ttl       time.Duration
	now       func() time.Time
	// notify are called with every write recorded (Notify).
	notify []func(ObjectKey, Write)
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

// NewStore returns an empty store.
func NewStore(opts ...StoreOption) *Store {
	s := &Store{writes: map[ObjectKey][]Write{}, perObject: 16, ttl: 15 * time.Minute, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Record remembers a write.
func (s *Store) Record(key ObjectKey, w Write) {
	s.mu.Lock()
	list := append(s.writes[key], w)
	sort.SliceStable(list, func(i, j int) bool { return list[i].Time.Before(list[j].Time) })
	if len(list) > s.perObject {
		list = list[len(list)-s.perObject:]
	}
	s.writes[key] = list
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

// Lookup returns the latest write to key at or before at (allowing a second
// of clock skew between apiserver and reflux), made by fieldManager when it
// is not empty.
func (s *Store) Lookup(key ObjectKey, fieldManager string, at time.Time) (Write, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.writes[key]
	limit := at.Add(time.Second)
	for i := len(list) - 1; i >= 0; i-- {
		w := list[i]
		if w.Time.After(limit) {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.writes[key]
	limit := at.Add(time.Second)
	for i := len(list) - 1; i >= 0; i-- {
		if w := list[i]; !w.Time.After(limit) && match(w) {
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
		w := list[i]
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

// Len returns the number of objects with remembered writes.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.writes)
}

// expireLocked drops writes older than the TTL. Called on every Record, so
// memory stays bounded by the write rate times the TTL.
func (s *Store) expireLocked() {
	cutoff := s.now().Add(-s.ttl)
	for k, list := range s.writes {
		i := 0
		for i < len(list) && list[i].Time.Before(cutoff) {
			i++
		}
		if i == len(list) {
			delete(s.writes, k)
		} else if i > 0 {
			s.writes[k] = list[i:]
		}
	}
}
