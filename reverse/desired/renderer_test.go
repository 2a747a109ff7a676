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

// rendered waits for req to be rendered and returns the render.
func rendered(g Gomega, r *Renderer, d *done, req Request) *Render {
	st := r.Want(req)
	if st.Render != nil {
		return st.Render
	}
	g.Expect(st.Err).NotTo(HaveOccurred())
	g.Expect(st.Building).To(BeTrue())
	d.wait(g)
	st = r.Want(req)
	g.Expect(st.Err).NotTo(HaveOccurred())
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

func TestRendererRefusesOtherRevisions(t *testing.T) {
	g := NewWithT(t)
	artifact, hits := artifactServer(t, tarball(t, "testdata/shop"))
	d := newDone()
	renderer := NewRenderer(NewFetcher(1, 10<<20, 10<<20), RendererOptions{Done: d.fn, RetryAfter: time.Hour})
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	renderer.now = func() time.Time { return now }

	ks := shopKustomization()
	ks.Status.LastAppliedRevision = "main@sha1:old"
	st := renderer.Want(Request{Kustomization: ks, Artifact: artifact})
	g.Expect(st.Err).To(MatchError(ErrRevisionUnavailable))
	g.Expect(st.Err.Error()).To(ContainSubstring("applied main@sha1:old, source serves main@sha1:abc"))

	ks.Status.LastAppliedRevision = ""
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: artifact}).Err).To(MatchError(ErrRevisionUnavailable))
	g.Expect(atomic.LoadInt32(hits)).To(Equal(int32(0)), "nothing is fetched for a revision that cannot match")

	// A digest mismatch is reported until RetryAfter, then tried again.
	ks = shopKustomization()
	bad := *artifact
	bad.Digest = "sha256:" + hex.EncodeToString(make([]byte, 32))
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: &bad}).Building).To(BeTrue())
	d.wait(g)
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: &bad}).Err).To(HaveOccurred())
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: &bad}).Err).To(HaveOccurred(), "not retried in a loop")
	now = now.Add(2 * time.Hour)
	g.Expect(renderer.Want(Request{Kustomization: ks, Artifact: &bad}).Building).To(BeTrue(), "retried after RetryAfter")
	d.wait(g)
	// The good artifact for the same key is wanted at once: a failure is
	// never served in place of a render.
	renderer.now = func() time.Time { return now.Add(4 * time.Hour) }
	r := rendered(g, renderer, d, Request{Kustomization: ks, Artifact: artifact})
	g.Expect(r.Objects).To(HaveLen(3))
}

// TestRendererNewerRevisionCancelsOlder: a build still running for an
// older revision is cancelled, its result is never served, and Want never
// waits for either.
func TestRendererNewerRevisionCancelsOlder(t *testing.T) {
	g := NewWithT(t)
	d := newDone()
	renderer := NewRenderer(nil, RendererOptions{Done: d.fn})
	release := make(chan struct{})
	started := make(chan string, 2)
	var mu sync.Mutex
	cancelled := map[string]bool{}
	renderer.render = func(ctx context.Context, req Request) (*Render, error) {
		rev := req.Kustomization.Status.LastAppliedRevision
		started <- rev
		select {
		case <-ctx.Done():
			mu.Lock()
			cancelled[rev] = true
			mu.Unlock()
			return nil, ctx.Err()
		case <-release:
			return &Render{Revision: rev}, nil
		}
	}
	ks := shopKustomization()
	old := Request{Kustomization: ks.DeepCopy(), Artifact: &meta.Artifact{Revision: "main@sha1:abc"}}
	g.Expect(renderer.Want(old).Building).To(BeTrue())
	g.Eventually(started).Should(Receive(Equal("main@sha1:abc")), "the older build is under way")

	ks.Status.LastAppliedRevision = "main@sha1:def"
	newer := Request{Kustomization: ks, Artifact: &meta.Artifact{Revision: "main@sha1:def"}}
	g.Expect(renderer.Want(newer).Building).To(BeTrue())
	g.Eventually(func() bool { mu.Lock(); defer mu.Unlock(); return cancelled["main@sha1:abc"] }).Should(BeTrue())

	close(release)
	d.wait(g)
	st := renderer.Want(newer)
	g.Expect(st.Render).NotTo(BeNil())
	g.Expect(st.Render.Revision).To(Equal("main@sha1:def"))
	g.Expect(renderer.Current(types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}).Revision).To(Equal("main@sha1:def"))
	g.Consistently(d.ch, 200*time.Millisecond).ShouldNot(Receive(), "the cancelled build reports nothing")
}

// TestRendererBoundsConcurrentBuilds: at most Workers builds run at once.
func TestRendererBoundsConcurrentBuilds(t *testing.T) {
	g := NewWithT(t)
	d := newDone()
	renderer := NewRenderer(nil, RendererOptions{Workers: 2, Done: d.fn})
	var running, peak atomic.Int32
	release := make(chan struct{})
	renderer.render = func(ctx context.Context, req Request) (*Render, error) {
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
