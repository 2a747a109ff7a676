package audit

import (
	"crypto/sha256"
	"slices"
	"sync"
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
}

// NewSenders returns an empty registry.
func NewSenders() *Senders {
	return &Senders{stores: map[[sha256.Size]byte][]*Store{}}
}

// Register makes the events sent with token go to store too, until
// release is called. Several engines may govern one cluster (one per
// kubeconfig Secret naming it): each keeps a store of its own, and every
// event reaches them all.
func (s *Senders) Register(token string, store *Store) (release func()) {
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stores[key] = append(slices.Clone(s.stores[key]), store)
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
