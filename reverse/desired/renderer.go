package desired

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/http/fetch"
	"github.com/fluxcd/pkg/tar"
	"k8s.io/apimachinery/pkg/types"

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
	// Kustomization whose applied revision is rendered. It is read, never
	// kept: the Renderer holds its own copy.
	Kustomization *kustomizev1.Kustomization
	// Artifact is the source's current artifact.
	Artifact *meta.Artifact
	// SubstituteFrom is the resolved postBuild.substituteFrom data.
	SubstituteFrom []kustomize.SubstituteSource
}

// State is what the Renderer has for a request.
type State struct {
	// Render is the render of the requested revision, generation and
	// substitutions; nil until it is ready.
	Render *Render
	// Building is true while that render runs; Since is when it started.
	Building bool
	Since    time.Time
	// Err is why the last attempt failed; the next Want after RetryAfter
	// tries again.
	Err error
	// Builds counts the kustomize builds run for the requested revision,
	// so that the one-build-per-revision promise can be watched.
	Builds int
}

// Observer is told of every finished build.
type Observer interface {
	ObserveRender(ks types.NamespacedName, revision string, took time.Duration, err error)
}

// RendererOptions tune a Renderer.
type RendererOptions struct {
	// Workers bounds the builds that run at once; a build of a large tree
	// takes a core for minutes. Default 2.
	Workers int
	// RetryAfter is how long a failed render is reported before Want tries
	// again. Default 30s.
	RetryAfter time.Duration
	// Observer, when set, is told of every build.
	Observer Observer
	// Done, when set, is called (from the build's goroutine) when a wanted
	// render finished, successfully or not.
	Done func(types.NamespacedName)
}

// Renderer renders Kustomizations off the caller's goroutine and keeps the
// latest render of each. Want never waits on a build: it starts one when
// the request differs from what is rendered or being rendered, and a newer
// request cancels an older one's build. It is safe for concurrent use.
type Renderer struct {
	fetcher Fetcher
	opts    RendererOptions
	slots   chan struct{}
	now     func() time.Time
	// render builds an extracted artifact; a seam for tests.
	render func(ctx context.Context, req Request) (*Render, error)

	mu    sync.Mutex
	state map[types.NamespacedName]*slot
}

// slot is one Kustomization's renders.
type slot struct {
	current    *Render
	currentKey string
	// wanted is the key being built (or that last failed), with its cancel.
	wanted   string
	cancel   context.CancelFunc
	since    time.Time
	building bool
	err      error
	failedAt time.Time
	// builds counts builds per revision, for the current revision only.
	revision string
	builds   int
}

// NewRenderer returns a Renderer that downloads artifacts with fetcher.
func NewRenderer(fetcher Fetcher, opts RendererOptions) *Renderer {
	if opts.Workers < 1 {
		opts.Workers = 2
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 30 * time.Second
	}
	r := &Renderer{fetcher: fetcher, opts: opts, slots: make(chan struct{}, opts.Workers), now: time.Now,
		state: map[types.NamespacedName]*slot{}}
	r.render = r.fetchAndRender
	return r
}

// Want returns what is rendered for req and, if the render for it is not
// there yet, makes sure it is being built.
func (r *Renderer) Want(req Request) State {
	ks := req.Kustomization
	id := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	if err := checkRevision(req); err != nil {
		return State{Err: err}
	}
	key := fmt.Sprintf("%s@%d@%s", ks.Status.LastAppliedRevision, ks.Generation, substituteDigest(req.SubstituteFrom))
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state[id]
	if s == nil {
		s = &slot{}
		r.state[id] = s
	}
	if s.revision != ks.Status.LastAppliedRevision {
		s.revision, s.builds = ks.Status.LastAppliedRevision, 0
	}
	switch {
	case s.currentKey == key:
		return State{Render: s.current, Builds: s.builds}
	case s.wanted == key && s.building:
		return State{Building: true, Since: s.since, Builds: s.builds}
	case s.wanted == key && s.err != nil && r.now().Sub(s.failedAt) < r.opts.RetryAfter:
		return State{Err: s.err, Builds: s.builds}
	}
	if s.cancel != nil {
		s.cancel() // a newer revision (or spec) replaces the older build
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.wanted, s.cancel, s.since, s.building, s.err = key, cancel, r.now(), true, nil
	go r.build(ctx, cancel, id, key, copyRequest(req))
	return State{Building: true, Since: s.since, Builds: s.builds}
}

// copyRequest deep-copies what the build reads, so the caller may change
// its objects afterwards.
func copyRequest(req Request) Request {
	out := Request{Kustomization: req.Kustomization.DeepCopy(), Artifact: req.Artifact.DeepCopy()}
	for _, s := range req.SubstituteFrom {
		c := kustomize.SubstituteSource{Kind: s.Kind, Name: s.Name, Data: make(map[string]string, len(s.Data))}
		for k, v := range s.Data {
			c.Data[k] = v
		}
		out.SubstituteFrom = append(out.SubstituteFrom, c)
	}
	return out
}

func (r *Renderer) build(ctx context.Context, cancel context.CancelFunc, id types.NamespacedName, key string, req Request) {
	defer cancel()
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	start := r.now()
	render, err := r.render(ctx, req)
	<-r.slots
	if len(r.slots) == 0 {
		// A build allocates many times what the render keeps (krusty's
		// resource maps, the YAML round trips), and the Go runtime hands
		// that back to the OS only slowly. Once no build runs, return it
		// now, so the process's memory is what it holds.
		debug.FreeOSMemory()
	}
	if ctx.Err() != nil {
		return // replaced or forgotten meanwhile: nobody wants this one
	}
	if r.opts.Observer != nil {
		r.opts.Observer.ObserveRender(id, req.Kustomization.Status.LastAppliedRevision, r.now().Sub(start), err)
	}
	r.mu.Lock()
	s := r.state[id]
	if s == nil || s.wanted != key {
		r.mu.Unlock()
		return
	}
	s.building, s.cancel = false, nil
	if s.revision == req.Kustomization.Status.LastAppliedRevision {
		s.builds++
	}
	if err != nil {
		s.err, s.failedAt = err, r.now()
	} else {
		s.current, s.currentKey = render, key
	}
	r.mu.Unlock()
	if r.opts.Done != nil {
		r.opts.Done(id)
	}
}

// Current returns the latest finished render of a Kustomization, whatever
// revision it is of; nil when there is none.
func (r *Renderer) Current(id types.NamespacedName) *Render {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.state[id]; s != nil {
		return s.current
	}
	return nil
}

// Forget drops a Kustomization's renders and cancels its build, for one
// that was deleted or stopped being governed.
func (r *Renderer) Forget(id types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.state[id]; s != nil && s.cancel != nil {
		s.cancel()
	}
	delete(r.state, id)
}

// checkRevision refuses requests whose applied revision the source does not
// serve: rendering another revision would report drift that is not there.
func checkRevision(req Request) error {
	applied := req.Kustomization.Status.LastAppliedRevision
	if applied == "" {
		return fmt.Errorf("%w: Kustomization has applied no revision yet", ErrRevisionUnavailable)
	}
	if req.Artifact == nil || req.Artifact.Revision != applied {
		current := "none"
		if req.Artifact != nil {
			current = req.Artifact.Revision
		}
		return fmt.Errorf("%w: applied %s, source serves %s", ErrRevisionUnavailable, applied, current)
	}
	return nil
}

func (r *Renderer) fetchAndRender(ctx context.Context, req Request) (*Render, error) {
	dir, err := os.MkdirTemp("", "reflux-artifact-")
	if err != nil {
		return nil, fmt.Errorf("creating artifact dir: %w", err)
	}
	defer os.RemoveAll(dir)
	a := req.Artifact
	if err := r.fetcher.FetchWithContext(ctx, a.URL, a.Digest, dir); err != nil {
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
