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

// ErrRevisionUnavailable means there is no revision to render: Flux
// applied none yet, or the source serves no artifact (or lost it). The
// drift engine reports this and never guesses drift against a revision
// whose files it does not know.
var ErrRevisionUnavailable = errors.New("no artifact to render")

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
	// Render is the best render there is for the request: the one of the
	// revision Flux applied, with the Kustomization's current spec and
	// substitutions, when it is ready (Ready); otherwise the newest render
	// finished, of whatever revision, which the engine may still use for
	// the objects a newer revision leaves as they were; nil when none.
	Render *Render
	// Ready is true when Render is of the requested revision, spec and
	// substitutions.
	Ready bool
	// Manifests are the manifests known of the revision Flux applied and of
	// the one the source serves (nil where not taken yet).
	Manifests []*Manifest
	// Building is true while a render runs; Since is when it started.
	Building bool
	Since    time.Time
	// Skipped counts revisions that were never rendered because a newer
	// one was wanted before their turn: when revisions come faster than a
	// build finishes, the Renderer builds the newest, never every one.
	Skipped int
	// Err is why the last attempt failed; the next Want after RetryAfter
	// tries again.
	Err error
	// Builds counts the kustomize builds run for the applied revision, so
	// that the one-build-per-revision promise can be watched.
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
	// render finished, successfully or not, and when a revision's manifest
	// was taken, ahead of its build.
	Done func(types.NamespacedName)
	// Delay, when set, is waited before each build: a slow build made on
	// purpose, so that tests at a size that fits CI see what a tree of
	// tens of thousands of objects does (issue 20).
	Delay time.Duration
	// Gate, when set, is waited on before each build, after Delay: tests
	// hold renders back for as long as a step takes, where a delay would
	// assume how long that is.
	Gate func(ctx context.Context) error
	// FluxVersion is the version of the kustomize-controller that applies
	// the renders, as its builds stamp it (kustomize.BuildOptions
	// ManagedByVersion); "" is kustomize.PairedFluxVersion.
	FluxVersion string
	// BuildTimeout is the time budget of one build, from when it gets its
	// turn (see buildWithin); past it the render fails with
	// ErrRenderBudget. Default DefaultBuildTimeout.
	BuildTimeout time.Duration
	// MaxFileSize and MaxLoadSize are the size budgets of one build
	// (kustomize.BuildOptions); 0 is kustomize's default.
	MaxFileSize, MaxLoadSize int64
}

// DefaultBuildTimeout is the default time budget of a build. Flux gives
// a Kustomization's whole reconcile spec.timeout, which defaults to its
// interval, commonly 10m; a tree kustomize-controller builds in time
// renders in reflux too, and the largest trees reflux is benchmarked with
// (tens of thousands of objects) build in a few minutes.
const DefaultBuildTimeout = 10 * time.Minute

// keepRenders bounds the finished renders kept per Kustomization: the
// applied revision's, and a newer one being rolled out.
const keepRenders = 2

// keepManifests bounds the manifests kept per Kustomization.
const keepManifests = 4

// Renderer renders Kustomizations off the caller's goroutine and keeps the
// latest renders of each. Want never waits on a build. It renders the
// revision the source serves, as soon as it serves it, while Flux may
// still be applying it. A build is never cancelled for a newer request:
// the newest request waits for it and is built next, so a Kustomization
// whose revisions come faster than a build finishes still gets renders,
// skipping the revisions in between. It is safe for concurrent use.
type Renderer struct {
	fetcher Fetcher
	opts    RendererOptions
	slots   chan struct{}
	now     func() time.Time
	// render builds an extracted artifact; a seam for tests. It calls
	// noted with the tree's manifest before it builds.
	render func(ctx context.Context, req Request, noted func(*Manifest)) (*Render, error)
	// manifestOf takes a revision's manifest without building it; a seam
	// for tests.
	manifestOf func(ctx context.Context, req Request) (*Manifest, error)
	// buildTree is kustomize.Build; a seam for tests.
	buildTree func(ctx context.Context, opts kustomize.BuildOptions) (*kustomize.Result, error)
	// turn is held by the one build that runs krusty, abandoned or not
	// (buildWithin).
	turn chan struct{}

	mu    sync.Mutex
	state map[types.NamespacedName]*slot
}

// slot is one Kustomization's renders.
type slot struct {
	// renders are the finished renders, newest first.
	renders []keyed
	// manifests are the manifests taken, newest last.
	manifests []*Manifest
	// building is the key being built, since when, and its request;
	// cancel stops it when the Kustomization is forgotten.
	building string
	since    time.Time
	cancel   context.CancelFunc
	// next is the newest request wanted while building, built next.
	next    *Request
	nextKey string
	skipped int
	// errKey is the key whose build failed last, at failedAt.
	errKey   string
	err      error
	failedAt time.Time
	// builds counts builds by revision, for the applied revision and the
	// source's only: a revision is often built before Flux applies it.
	builds map[string]int
	// noting are the revisions whose manifest is being taken ahead of
	// their build (noteAhead).
	noting map[string]bool
}

// keyed is a finished render and the key it was built for.
type keyed struct {
	key    string
	render *Render
}

// NewRenderer returns a Renderer that downloads artifacts with fetcher.
func NewRenderer(fetcher Fetcher, opts RendererOptions) *Renderer {
	if opts.Workers < 1 {
		opts.Workers = 2
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 30 * time.Second
	}
	if opts.BuildTimeout <= 0 {
		opts.BuildTimeout = DefaultBuildTimeout
	}
	r := &Renderer{fetcher: fetcher, opts: opts, slots: make(chan struct{}, opts.Workers), now: time.Now,
		state: map[types.NamespacedName]*slot{}, buildTree: kustomize.Build, turn: make(chan struct{}, 1)}
	r.render = r.fetchAndRender
	r.manifestOf = r.fetchManifest
	return r
}

// Want returns what is rendered for req and, if the render for it is not
// there yet, makes sure it is being built, or built next.
func (r *Renderer) Want(req Request) State {
	ks := req.Kustomization
	id := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	if err := checkRevision(req); err != nil {
		return State{Err: err}
	}
	key := keyOf(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state[id]
	if s == nil {
		s = &slot{builds: map[string]int{}}
		r.state[id] = s
	}
	for rev := range s.builds {
		if rev != ks.Status.LastAppliedRevision && rev != req.Artifact.Revision {
			delete(s.builds, rev)
		}
	}
	switch {
	case s.has(key), s.building == key:
	case s.errKey == key && s.err != nil && r.now().Sub(s.failedAt) < r.opts.RetryAfter:
		st := s.stateFor(req)
		st.Err = s.err
		return st
	case s.building != "":
		// Never cancel a build under way: a newer revision waits for it,
		// and replaces whatever waited before it.
		if s.next != nil && s.nextKey != key {
			s.skipped++
		}
		c := copyRequest(req)
		s.next, s.nextKey = &c, key
		r.noteAhead(id, s, c)
	default:
		r.start(id, s, key, copyRequest(req))
	}
	return s.stateFor(req)
}

// keyOf is what a render is of: the source's revision, the Kustomization's
// generation and its substitutions.
func keyOf(req Request) string {
	return fmt.Sprintf("%s@%d@%s", req.Artifact.Revision, req.Kustomization.Generation, SubstitutionsDigest(req.SubstituteFrom))
}

// appliedKey is the key of the render Flux applied.
func appliedKey(req Request) string {
	ks := req.Kustomization
	return fmt.Sprintf("%s@%d@%s", ks.Status.LastAppliedRevision, ks.Generation, SubstitutionsDigest(req.SubstituteFrom))
}

func (s *slot) has(key string) bool {
	for _, k := range s.renders {
		if k.key == key {
			return true
		}
	}
	return false
}

// stateFor is what the slot has for req.
func (s *slot) stateFor(req Request) State {
	st := State{Building: s.building != "", Since: s.since, Skipped: s.skipped,
		Builds: s.builds[req.Kustomization.Status.LastAppliedRevision]}
	applied := appliedKey(req)
	for _, k := range s.renders {
		if k.key == applied {
			st.Render, st.Ready = k.render, true
			break
		}
	}
	if st.Render == nil && len(s.renders) > 0 {
		st.Render = s.renders[0].render
	}
	for _, rev := range []string{req.Kustomization.Status.LastAppliedRevision, req.Artifact.Revision} {
		st.Manifests = append(st.Manifests, s.manifest(rev))
		if req.Artifact.Revision == req.Kustomization.Status.LastAppliedRevision {
			break
		}
	}
	return st
}

func (s *slot) manifest(revision string) *Manifest {
	for _, m := range s.manifests {
		if m.Revision == revision {
			return m
		}
	}
	for _, k := range s.renders {
		if k.render.Files != nil && k.render.Files.Revision == revision {
			return k.render.Files
		}
	}
	return nil
}

// start builds key; the caller holds r.mu.
func (r *Renderer) start(id types.NamespacedName, s *slot, key string, req Request) {
	ctx, cancel := context.WithCancel(context.Background())
	s.building, s.cancel, s.since = key, cancel, r.now()
	go r.build(ctx, cancel, id, key, req)
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
	render, err := r.render(ctx, req, func(m *Manifest) { r.noteManifest(id, m) })
	<-r.slots
	if len(r.slots) == 0 {
		// A build allocates many times what the render keeps (krusty's
		// resource maps, the YAML round trips), and the Go runtime hands
		// that back to the OS only slowly. Once no build runs, return it
		// now, so the process's memory is what it holds.
		debug.FreeOSMemory()
	}
	if ctx.Err() != nil {
		return // forgotten meanwhile: nobody wants this one
	}
	if r.opts.Observer != nil {
		r.opts.Observer.ObserveRender(id, req.Artifact.Revision, r.now().Sub(start), err)
	}
	r.finish(id, key, req, render, err)
	if r.opts.Done != nil {
		r.opts.Done(id)
	}
}

// finish keeps a build's outcome and starts the build that waited for it.
func (r *Renderer) finish(id types.NamespacedName, key string, req Request, render *Render, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state[id]
	if s == nil || s.building != key {
		return
	}
	s.building, s.cancel = "", nil
	s.builds[req.Artifact.Revision]++
	if err != nil {
		s.errKey, s.err, s.failedAt = key, err, r.now()
	} else {
		s.renders = append([]keyed{{key: key, render: render}}, s.renders...)
		if len(s.renders) > keepRenders {
			s.renders = s.renders[:keepRenders]
		}
		s.skipped = 0
	}
	if next := s.next; next != nil {
		s.next, s.nextKey = nil, ""
		if !s.has(keyOf(*next)) {
			r.start(id, s, keyOf(*next), *next)
		}
	}
}

// noteManifest keeps a revision's manifest, taken before its build, and
// says so: the engine can already tell which objects it leaves as they
// were.
func (r *Renderer) noteManifest(id types.NamespacedName, m *Manifest) {
	r.mu.Lock()
	s := r.state[id]
	if s != nil && s.manifest(m.Revision) == nil {
		s.manifests = append(s.manifests, m)
		if len(s.manifests) > keepManifests {
			s.manifests = s.manifests[len(s.manifests)-keepManifests:]
		}
	}
	r.mu.Unlock()
	if s != nil && r.opts.Done != nil {
		r.opts.Done(id)
	}
}

// manifestTimeout bounds the download of an artifact whose manifest is
// taken ahead of its build.
const manifestTimeout = 2 * time.Minute

// noteAhead takes the manifest of a revision that waits for the build
// under way, now rather than when its own build starts: that build can
// take minutes, and with the manifest the engine already evaluates the
// changes to objects the revision leaves as they were (Snapshot.Usable,
// issue 20 §1). It costs a download and a hash of the tree, never a
// build. The caller holds r.mu.
func (r *Renderer) noteAhead(id types.NamespacedName, s *slot, req Request) {
	rev := req.Artifact.Revision
	if s.manifest(rev) != nil || s.noting[rev] {
		return
	}
	if s.noting == nil {
		s.noting = map[string]bool{}
	}
	s.noting[rev] = true
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), manifestTimeout)
		defer cancel()
		m, err := r.manifestOf(ctx, req)
		r.mu.Lock()
		delete(s.noting, rev)
		r.mu.Unlock()
		if err != nil {
			// Only the early answer is lost: the revision's own build
			// takes the manifest again, and reports the error if it stays.
			return
		}
		r.noteManifest(id, m)
	}()
}

// Current returns the latest finished render of a Kustomization, whatever
// revision it is of; nil when there is none.
func (r *Renderer) Current(id types.NamespacedName) *Render {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.state[id]; s != nil && len(s.renders) > 0 {
		return s.renders[0].render
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

// checkRevision refuses requests with nothing to render: Flux applied no
// revision yet, or the source serves no artifact.
func checkRevision(req Request) error {
	if req.Kustomization.Status.LastAppliedRevision == "" {
		return fmt.Errorf("%w: Kustomization has applied no revision yet", ErrRevisionUnavailable)
	}
	if req.Artifact == nil {
		return fmt.Errorf("%w: the source serves no artifact", ErrRevisionUnavailable)
	}
	return nil
}

func (r *Renderer) fetchAndRender(ctx context.Context, req Request, noted func(*Manifest)) (*Render, error) {
	dir, err := os.MkdirTemp("", "reflux-artifact-")
	if err != nil {
		return nil, fmt.Errorf("creating artifact dir: %w", err)
	}
	defer os.RemoveAll(dir)
	a := req.Artifact
	files, err := r.fetchTree(ctx, req, dir)
	if err != nil {
		return nil, err
	}
	noted(files)
	if r.opts.Delay > 0 {
		select {
		case <-time.After(r.opts.Delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if r.opts.Gate != nil {
		if err := r.opts.Gate(ctx); err != nil {
			return nil, err
		}
	}
	out, err := render(ctx, kustomize.BuildOptions{Root: dir, Kustomization: req.Kustomization, SubstituteFrom: req.SubstituteFrom,
		ManagedByVersion: r.opts.FluxVersion, MaxFileSize: r.opts.MaxFileSize, MaxLoadSize: r.opts.MaxLoadSize}, a.Revision, r.buildWithin)
	if err != nil {
		return nil, err
	}
	out.Files = files
	return out, nil
}

// fetchTree downloads req's artifact into dir and returns its manifest.
func (r *Renderer) fetchTree(ctx context.Context, req Request, dir string) (*Manifest, error) {
	a := req.Artifact
	if err := r.fetcher.FetchWithContext(ctx, a.URL, a.Digest, dir); err != nil {
		if errors.Is(err, fetch.ErrFileNotFound) {
			return nil, fmt.Errorf("%w: artifact %s not found: %w", ErrRevisionUnavailable, a.URL, err)
		}
		return nil, fmt.Errorf("fetching artifact %s: %w", a.URL, err)
	}
	return hashTree(dir, a.Revision)
}

// fetchManifest takes req's manifest without building it.
func (r *Renderer) fetchManifest(ctx context.Context, req Request) (*Manifest, error) {
	dir, err := os.MkdirTemp("", "reflux-manifest-")
	if err != nil {
		return nil, fmt.Errorf("creating artifact dir: %w", err)
	}
	defer os.RemoveAll(dir)
	return r.fetchTree(ctx, req, dir)
}

// Build renders opts.Root, the tree of revision, as the Renderer does,
// with the tree's manifest: for tools and tests that have a tree at hand
// rather than an artifact. opts.ManagedByVersion is
// RendererOptions.FluxVersion; a tool that knows the file declaring the
// Kustomization sets opts.KustomizationFile, so the origin index points
// fields its spec sets at their line.
func Build(ctx context.Context, opts kustomize.BuildOptions, revision string) (*Render, error) {
	files, err := hashTree(opts.Root, revision)
	if err != nil {
		return nil, err
	}
	out, err := render(ctx, opts, revision, kustomize.Build)
	if err != nil {
		return nil, err
	}
	out.Files = files
	return out, nil
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
