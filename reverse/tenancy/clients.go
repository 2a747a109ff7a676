package tenancy

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultCacheSize bounds the impersonating clients kept at once: one per
// tenant identity in use. A client evicted is rebuilt on next use, which
// costs no request.
const DefaultCacheSize = 128

// Clients builds and keeps clients that impersonate an identity, one per
// identity, least recently used evicted first. It is safe for concurrent
// use.
type Clients struct {
	base  *rest.Config
	opts  client.Options
	cache *lru.Cache
}

// NewClients returns Clients that impersonate over cfg (reflux's own
// connection). opts must carry the manager's Scheme and Mapper: sharing
// the RESTMapper is what lets a client be built without a request.
// size <= 0 means DefaultCacheSize.
func NewClients(cfg *rest.Config, opts client.Options, size int) (*Clients, error) {
	if cfg == nil || opts.Mapper == nil || opts.Scheme == nil {
		return nil, errors.New("tenancy: a rest.Config, a Scheme and a Mapper are required")
	}
	if size <= 0 {
		size = DefaultCacheSize
	}
	// Each client's HTTP client is built from its own impersonating
	// config; a caller's HTTPClient would not impersonate.
	opts.HTTPClient = nil
	opts.Cache = nil
	return &Clients{base: cfg, opts: opts, cache: lru.New(size)}, nil
}

// For returns a client whose every request impersonates user (a
// ServiceAccount username from Identity). It never makes a request: the
// RESTMapper is shared and client-go reuses the TLS transport of
// identical configs, so building one costs only memory.
func (c *Clients) For(user string) (client.Client, error) {
	if user == "" {
		return nil, errors.New("tenancy: no identity to impersonate")
	}
	if v, ok := c.cache.Get(user); ok {
		return v.(client.Client), nil
	}
	cfg := rest.CopyConfig(c.base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cl, err := client.New(cfg, c.opts)
	if err != nil {
		return nil, fmt.Errorf("building a client impersonating %s: %w", user, err)
	}
	// Two callers may build at once; either client is as good.
	c.cache.Add(user, cl)
	return cl, nil
}

// Len is the number of clients kept.
func (c *Clients) Len() int { return c.cache.Len() }
