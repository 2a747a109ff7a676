package desired

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/http/fetch"
	"github.com/fluxcd/pkg/tar"

	"github.com/reflux-dev/reflux/kustomize"
)

// ErrRevisionUnavailable means the source no longer (or not yet) serves the
// revision Flux applied, so the desired state cannot be rendered. The drift
// engine reports this and never guesses drift against another revision.
var ErrRevisionUnavailable = errors.New("applied revision is not the source's current artifact")

// Fetcher downloads and extracts an artifact into dir, verifying its digest.
type Fetcher interface {
	FetchWithContext(ctx context.Context, url, digest, dir string) error
}

var _ Fetcher = &fetch.ArchiveFetcher{}

// Request names what to render.
type Request struct {
	// Kustomization whose applied revision is rendered.
	Kustomization *kustomizev1.Kustomization
	// Artifact is the source's current artifact.
	Artifact *meta.Artifact
	// SubstituteFrom is the resolved postBuild.substituteFrom data.
	SubstituteFrom []kustomize.SubstituteSource
}

// Cache renders Kustomizations and keeps the latest render of each. It is
// safe for concurrent use; concurrent requests for one Kustomization share
// one render.
type Cache struct {
	fetcher Fetcher
	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	once   sync.Once
	key    string
	render *Render
	err    error
}

// NewCache returns a Cache that downloads artifacts with fetcher.
func NewCache(fetcher Fetcher) *Cache {
	return &Cache{fetcher: fetcher, entries: map[string]*entry{}}
}

// Get returns the render of the revision ks last applied. It renders only
// when the revision, the Kustomization's generation or the substitution
// data changed since the last call.
func (c *Cache) Get(ctx context.Context, req Request) (*Render, error) {
	ks := req.Kustomization
	applied := ks.Status.LastAppliedRevision
	if applied == "" {
		return nil, fmt.Errorf("%w: Kustomization has applied no revision yet", ErrRevisionUnavailable)
	}
	if req.Artifact == nil || req.Artifact.Revision != applied {
		current := "none"
		if req.Artifact != nil {
			current = req.Artifact.Revision
		}
		return nil, fmt.Errorf("%w: applied %s, source serves %s", ErrRevisionUnavailable, applied, current)
	}
	id := ks.Namespace + "/" + ks.Name
	key := fmt.Sprintf("%s@%d@%s", applied, ks.Generation, substituteDigest(req.SubstituteFrom))

	c.mu.Lock()
	e, ok := c.entries[id]
	if !ok || e.key != key {
		e = &entry{key: key}
		c.entries[id] = e
	}
	c.mu.Unlock()

	e.once.Do(func() { e.render, e.err = c.render(ctx, req) })
	if e.err != nil {
		// Do not cache failures: a transient fetch error must not stick.
		c.mu.Lock()
		if c.entries[id] == e {
			delete(c.entries, id)
		}
		c.mu.Unlock()
	}
	return e.render, e.err
}

// Forget drops the render of a Kustomization, for one that was deleted or
// stopped being governed.
func (c *Cache) Forget(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, namespace+"/"+name)
}

func (c *Cache) render(ctx context.Context, req Request) (*Render, error) {
	dir, err := os.MkdirTemp("", "reflux-artifact-")
	if err != nil {
		return nil, fmt.Errorf("creating artifact dir: %w", err)
	}
	defer os.RemoveAll(dir)
	a := req.Artifact
	if err := c.fetcher.FetchWithContext(ctx, a.URL, a.Digest, dir); err != nil {
		if errors.Is(err, fetch.ErrFileNotFound) {
			return nil, fmt.Errorf("%w: artifact %s not found: %w", ErrRevisionUnavailable, a.URL, err)
		}
		return nil, fmt.Errorf("fetching artifact %s: %w", a.URL, err)
	}
	return render(ctx, dir, req.Kustomization, a.Revision, req.SubstituteFrom)
}

// NewFetcher returns Flux's archive fetcher with the limits reflux uses:
// retries for a source-controller that restarts, and bounded download and
// extraction sizes so a hostile artifact cannot fill the disk.
func NewFetcher(retries, maxDownloadSize, maxUntarSize int) *fetch.ArchiveFetcher {
	return fetch.New(
		fetch.WithRetries(retries),
		fetch.WithMaxDownloadSize(maxDownloadSize),
		fetch.WithUntar(tar.WithMaxUntarSize(maxUntarSize)),
	)
}
