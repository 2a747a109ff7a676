package desired

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

// tarball packs dir the way source-controller serves an artifact.
func tarball(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// artifactServer serves one artifact and counts downloads.
func artifactServer(t *testing.T, body []byte) (*meta.Artifact, *int32) {
	t.Helper()
	var hits int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/gitrepository/flux-system/shop/abc.tar.gz" {
			http.NotFound(w, r)
			return
		}
		atomic.AddInt32(&hits, 1)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	sum := sha256.Sum256(body)
	return &meta.Artifact{
		URL:      srv.URL + "/gitrepository/flux-system/shop/abc.tar.gz",
		Revision: "main@sha1:abc",
		Digest:   "sha256:" + hex.EncodeToString(sum[:]),
	}, &hits
}

func shopKustomization() *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{}
	ks.Name, ks.Namespace, ks.Generation = "shop", "flux-system", 1
	ks.Spec.Path = "./overlays/prod"
	ks.Spec.TargetNamespace = "shop"
	ks.Status.LastAppliedRevision = "main@sha1:abc"
	return ks
}

// done collects the Renderer's Done calls.
type done struct{ ch chan types.NamespacedName }

func newDone() *done { return &done{ch: make(chan types.NamespacedName, 16)} }

func (d *done) fn(id types.NamespacedName) { d.ch <- id }

// wait waits for a finished render.
func (d *done) wait(g Gomega) {
	g.Eventually(d.ch, 30*time.Second).Should(Receive())
}

// rendered waits for req to be rendered and returns the render. Done is
// also called when a revision's manifest is taken, ahead of the build, so
// it waits on Ready, not on one call.
func rendered(g Gomega, r *Renderer, d *done, req Request) *Render {
	var st State
	g.Eventually(func() bool {
		st = r.Want(req)
		g.Expect(st.Err).NotTo(HaveOccurred())
		return st.Ready
	}, 30*time.Second).Should(BeTrue())
	g.Expect(st.Render).NotTo(BeNil())
	return st.Render
}

func TestRendererRendersAppliedRevisionAsFluxApplies(t *testing.T) {
	g := NewWithT(t)
	artifact, hits := artifactServer(t, tarball(t, "testdata/shop"))
	d := newDone()
	renderer := NewRenderer(NewFetcher(1, 10<<20, 10<<20), RendererOptions{Done: d.fn})
	ks := shopKustomization()

	r := rendered(g, renderer, d, Request{Kustomization: ks, Artifact: artifact})
	g.Expect(r.Revision).To(Equal("main@sha1:abc"))
	g.Expect(r.Objects).To(HaveLen(3))

	deploy, ok := r.Object(ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "checkout"})
	g.Expect(ok).To(BeTrue())
	replicas, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas")
	g.Expect(replicas).To(Equal(int64(4)))
	g.Expect(deploy.GetLabels()).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/name", "shop"))
	g.Expect(deploy.GetLabels()).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/namespace", "flux-system"))

	// The origin index comes from the same build and points the
	// overlay's replicas at its line.
	g.Expect(r.IndexErr).ToNot(HaveOccurred())
	o, err := r.Index.Lookup(origin.RefOf(deploy), "/spec/replicas")
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(o.File).To(Equal("overlays/prod/kustomization.yaml"))
	g.Expect(o.Kind).To(Equal(origin.Kind("replicas")))

	// Same revision and generation: served as is, no second build.
	st := renderer.Want(Request{Kustomization: ks, Artifact: artifact})
	g.Expect(st.Render).To(BeIdenticalTo(r))
	g.Expect(st.Builds).To(Equal(1), "one build per applied revision")
	g.Expect(atomic.LoadInt32(hits)).To(Equal(int32(1)))

	// A new generation of the Kustomization renders again.
	ks.Generation = 2
	rendered(g, renderer, d, Request{Kustomization: ks, Artifact: artifact})
	g.Expect(atomic.LoadInt32(hits)).To(Equal(int32(2)))
}

// TestRendererRendersTheSourcesRevisionAhead: while Flux has not applied
// the revision the source serves, that revision is rendered anyway, and
// its manifest is known at once; nothing is served as the applied
// revision's render until it is. A failure is reported until RetryAfter.
func TestRendererRendersTheSourcesRevisionAhead(t *testing.T) {
	g := NewWithT(t)
	artifact, hits := artifactServer(t, tarball(t, "testdata/shop"))
	d := newDone()
	renderer := NewRenderer(NewFetcher(1, 10<<20, 10<<20), RendererOptions{Done: d.fn, RetryAfter: time.Hour})
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	renderer.now = func() time.Time { return now }

	ks := shopKustomization()
	ks.Status.LastAppliedRevision = "main@sha1:old"
	var st State
	g.Eventually(func() *Render { st = renderer.Want(Request{Kustomization: ks, Artifact: artifact}); return st.Render }, 30*time.Second).
		ShouldNot(BeNil(), "the source's revision is rendered while Flux rolls it out")
	g.Expect(st.Ready).To(BeFalse(), "not the applied revision's render")
	g.Expect(st.Render.Revision).To(Equal("main@sha1:abc"))
	g.Expect(st.Manifests).To(HaveLen(2))
	g.Expect(st.Manifests[0]).To(BeNil(), "the applied revision's tree was never seen")
	g.Expect(st.Manifests[1].Revision).To(Equal("main@sha1:abc"))
	g.Expect(st.Manifests[1].Files).To(HaveKey("overlays/prod/kustomization.yaml"))
	g.Expect(st.Render.Files).To(BeIdenticalTo(st.Manifests[1]))

	// Flux applies it: the same render is now the applied one, not built again.
	ks.Status.LastAppliedRevision = "main@sha1:abc"
	st = renderer.Want(Request{Kustomization: ks, Artifact: artifact})
	g.Expect(st.Ready).To(BeTrue())
	g.Expect(st.Builds).To(Equal(1), "built before Flux applied it, and once")
	g.Expect(atomic.LoadInt32(hits)).To(Equal(int32(1)))

	ks.Status.LastAppliedRevision = ""
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: artifact}).Err).To(MatchError(ErrRevisionUnavailable))
	ks.Status.LastAppliedRevision = "main@sha1:abc"
	g.Expect(renderer.Want(Request{Kustomization: ks}).Err).To(MatchError(ErrRevisionUnavailable), "no artifact")

	// A digest mismatch is reported until RetryAfter, then tried again.
	ks = shopKustomization()
	ks.Name = "other"
	bad := *artifact
	bad.Digest = "sha256:" + hex.EncodeToString(make([]byte, 32))
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: &bad}).Building).To(BeTrue())
	g.Eventually(func() error { return renderer.Want(Request{Kustomization: ks, Artifact: &bad}).Err }, 30*time.Second).Should(HaveOccurred())
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: &bad}).Err).To(HaveOccurred(), "not retried in a loop")
	now = now.Add(2 * time.Hour)
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: &bad}).Building).To(BeTrue(), "retried after RetryAfter")
	g.Eventually(func() error { return renderer.Want(Request{Kustomization: ks, Artifact: &bad}).Err }, 30*time.Second).Should(HaveOccurred())
	// The good artifact for the same key is wanted at once: a failure is
	// never served in place of a render.
	renderer.now = func() time.Time { return now.Add(4 * time.Hour) }
	r := rendered(g, renderer, d, Request{Kustomization: ks, Artifact: artifact})
	g.Expect(r.Objects).To(HaveLen(3))
}

// TestRendererNeverCancelsABuildForANewerRevision: a build under way
// finishes even when newer revisions are wanted meanwhile; the newest of
// them is built next and those in between are skipped, so renders keep
// coming however fast revisions do (issue 20).
func TestRendererNeverCancelsABuildForANewerRevision(t *testing.T) {
	g := NewWithT(t)
	d := newDone()
	renderer := NewRenderer(nil, RendererOptions{Done: d.fn})
	release := make(chan struct{}, 4)
	started := make(chan string, 4)
	renderer.render = func(ctx context.Context, req Request, _ func(*Manifest)) (*Render, error) {
		rev := req.Artifact.Revision
		started <- rev
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return &Render{Revision: rev, Generation: req.Kustomization.Generation}, nil
		}
	}
	var mu sync.Mutex
	taken := map[string]int{}
	renderer.manifestOf = func(_ context.Context, req Request) (*Manifest, error) {
		mu.Lock()
		defer mu.Unlock()
		taken[req.Artifact.Revision]++
		return &Manifest{Revision: req.Artifact.Revision, Files: map[string]string{"flags.yaml": req.Artifact.Revision}}, nil
	}
	ks := shopKustomization()
	want := func(rev string) State {
		return renderer.Want(Request{Kustomization: ks, Artifact: &meta.Artifact{Revision: rev}})
	}
	g.Expect(want("main@sha1:abc").Building).To(BeTrue())
	g.Eventually(started).Should(Receive(Equal("main@sha1:abc")), "the first build is under way")
	g.Expect(want("main@sha1:def").Skipped).To(BeZero())
	// A revision waiting for the build has its manifest at once, not
	// when its own build starts: the engine tells from it which objects
	// it leaves as they were (issue 20 §1).
	g.Eventually(func() *Manifest { return want("main@sha1:def").Manifests[1] }).ShouldNot(BeNil())
	g.Expect(want("main@sha1:def").Manifests[1].Revision).To(Equal("main@sha1:def"))
	st := want("main@sha1:fff")
	g.Expect(st.Skipped).To(Equal(1), "def waited, and fff replaced it")
	g.Expect(st.Building).To(BeTrue())
	g.Eventually(func() *Manifest { return want("main@sha1:fff").Manifests[1] }).ShouldNot(BeNil())
	mu.Lock()
	g.Expect(taken).To(Equal(map[string]int{"main@sha1:def": 1, "main@sha1:fff": 1}), "once each, and never for the one building")
	mu.Unlock()

	release <- struct{}{}
	g.Eventually(started).Should(Receive(Equal("main@sha1:fff")), "the newest is built next; def never")
	st = want("main@sha1:fff")
	g.Expect(st.Render).NotTo(BeNil(), "the first build finished and is served meanwhile")
	g.Expect(st.Render.Revision).To(Equal("main@sha1:abc"))
	g.Expect(st.Skipped).To(BeZero(), "a render came: the count starts over")

	release <- struct{}{}
	id := types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}
	g.Eventually(func() string { return renderer.Current(id).Revision }).Should(Equal("main@sha1:fff"))
	st = want("main@sha1:fff")
	g.Expect(st.Ready).To(BeTrue(), "Flux applied abc: its render is the one served")
	g.Expect(st.Render.Revision).To(Equal("main@sha1:abc"))
	g.Consistently(started, 200*time.Millisecond).ShouldNot(Receive(), "nothing else is built")
}

// TestRendererBoundsConcurrentBuilds: at most Workers builds run at once.
func TestRendererBoundsConcurrentBuilds(t *testing.T) {
	g := NewWithT(t)
	d := newDone()
	renderer := NewRenderer(nil, RendererOptions{Workers: 2, Done: d.fn})
	var running, peak atomic.Int32
	release := make(chan struct{})
	renderer.render = func(ctx context.Context, req Request, _ func(*Manifest)) (*Render, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		running.Add(-1)
		return &Render{Revision: req.Kustomization.Status.LastAppliedRevision}, nil
	}
	for i := range 5 {
		ks := shopKustomization()
		ks.Name = ks.Name + string(rune('a'+i))
		g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: &meta.Artifact{Revision: "main@sha1:abc"}}).Building).To(BeTrue())
	}
	g.Eventually(running.Load).Should(Equal(int32(2)))
	g.Consistently(running.Load, 100*time.Millisecond).Should(Equal(int32(2)))
	close(release)
	for range 5 {
		d.wait(g)
	}
	g.Expect(peak.Load()).To(Equal(int32(2)))
}

// TestEncryptedObjectsAreNotCompared: Flux decrypts SOPS documents with
// keys reflux does not hold, so they are left out of the desired state
// instead of being compared as ciphertext.
func TestEncryptedObjectsAreNotCompared(t *testing.T) {
	g := NewWithT(t)
	artifact, _ := artifactServer(t, tarball(t, "testdata/shop-sops"))
	d := newDone()
	r := rendered(g, NewRenderer(NewFetcher(1, 10<<20, 10<<20), RendererOptions{Done: d.fn}), d,
		Request{Kustomization: shopKustomization(), Artifact: artifact})
	secret := ObjectKey{Kind: "Secret", Namespace: "shop", Name: "checkout-db"}
	_, ok := r.Object(secret)
	g.Expect(ok).To(BeFalse())
	g.Expect(r.Encrypted).To(ConsistOf(secret))
	g.Expect(r.Objects).To(HaveLen(3), "everything else is still desired")
}
