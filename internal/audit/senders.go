package audit

import (
	"crypto/sha256"
	"slices"
	"sync"
	"time"
)

// Senders are the remote clusters whose apiservers send their audit
// events to the same webhook as the hub's (issue 24): each is told apart
// by its own bearer token, and its events go to the stores of the engines
// governing that cluster, never to the hub's. It is safe for concurrent
// use.
//
// Tokens are kept as their SHA-256 digests: a lookup by digest takes the
// same time whatever the token sent shares with a known one.
type Senders struct {
	mu     sync.Mutex
	stores map[[sha256.Size]byte][]*Store
	// pending are the writes of tokens no store is registered for yet
	// (hold).
	pending map[[sha256.Size]byte]*pending
}

// NewSenders returns an empty registry.
func NewSenders() *Senders {
	return &Senders{stores: map[[sha256.Size]byte][]*Store{}, pending: map[[sha256.Size]byte]*pending{}}
}

// Register makes the events sent with token go to store too, until
// release is called. Several engines may govern one cluster (one per
// kubeconfig Secret naming it): each keeps a store of its own, and every
// event reaches them all. The first store registered for a token gets
// what it sent before (hold), recorded before Register returns.
func (s *Senders) Register(token string, store *Store) (release func()) {
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	s.stores[key] = append(slices.Clone(s.stores[key]), store)
	var early []keyedWrite
	if p, ok := s.pending[key]; ok {
		early = p.writes
		delete(s.pending, key)
	}
	s.mu.Unlock()
	// Outside the lock: recording calls the store's subscribers. Keep
	// is not asked: the engine watches nothing yet. The early writes
	// are bounded, and expire as any.
	for _, w := range early {
		store.record(w.key, w.write, false)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			rest := slices.DeleteFunc(slices.Clone(s.stores[key]), func(x *Store) bool { return x == store })
			if len(rest) == 0 {
				delete(s.stores, key)
				return
			}
			s.stores[key] = rest
		})
	}
}

// storesOf returns the stores registered for token, nil for a token no
// cluster sends.
func (s *Senders) storesOf(token string) []*Store {
	if s == nil || token == "" {
		return nil
	}
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stores[key]
}

// Writes sent with a token no engine has registered yet are kept, a
// bounded number for a bounded time, and handed to the first store
// registered for it: a spoke's apiserver sends from the moment it starts,
// and reflux connects to the spoke only when it first reconciles a
// Kustomization naming it, at its own start too. A batch the webhook
// refused would be lost: kube-apiserver does not retry a 401.
const (
	// maxPendingTokens bounds the tokens kept: past it, the one heard
	// from least recently goes.
	maxPendingTokens = 16
	// maxPendingWrites bounds the writes kept per token: past it, the
	// oldest go.
	maxPendingWrites = 20_000
	// pendingTTL is how long a token's writes wait for a store.
	pendingTTL = 10 * time.Minute
)

// keyedWrite is one write and the object it changed.
type keyedWrite struct {
	key   ObjectKey
	write Write
}

// pending is what a token no store is registered for has sent.
type pending struct {
	writes []keyedWrite
	last   time.Time
}

// Dropped is what Hold let go of: the tokens whose writes waited longer
// than their time for a store, or were pushed out by newer tokens, and
// the writes pushed out for room.
type Dropped struct {
	Tokens int
	Writes int
}

// hold keeps writes sent with token, which no store is registered for,
// until one is (Register). It reports whether the token is new to the
// buffer, and what expired or made room. A store registered since the
// caller looked is returned instead, for the caller to record in: the
// writes would otherwise wait for a Register that already happened.
func (s *Senders) hold(token string, writes []keyedWrite, now time.Time) (stores []*Store, fresh bool, dropped Dropped) {
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	if stores := s.stores[key]; stores != nil {
		return stores, false, dropped
	}
	for k, p := range s.pending {
		if now.Sub(p.last) > pendingTTL {
			delete(s.pending, k)
			dropped.Tokens++
		}
	}
	p, ok := s.pending[key]
	if !ok {
		if len(s.pending) >= maxPendingTokens {
			var oldest [sha256.Size]byte
			var at time.Time
			for k, q := range s.pending {
				if at.IsZero() || q.last.Before(at) {
					oldest, at = k, q.last
				}
			}
			delete(s.pending, oldest)
			dropped.Tokens++
		}
		p = &pending{}
		s.pending[key] = p
	}
	p.last = now
	p.writes = append(p.writes, writes...)
	if over := len(p.writes) - maxPendingWrites; over > 0 {
		p.writes = slices.Delete(p.writes, 0, over)
		dropped.Writes = over
	}
	return nil, !ok, dropped
}
