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
	"sync/atomic"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

func TestCacheRendersAppliedRevisionAsFluxApplies(t *testing.T) {
	g := NewWithT(t)
	artifact, hits := artifactServer(t, tarball(t, "testdata/shop"))
	cache := NewCache(NewFetcher(1, 10<<20, 10<<20))
	ks := shopKustomization()

	r, err := cache.Get(context.Background(), Request{Kustomization: ks, Artifact: artifact})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(r.Revision).To(Equal("main@sha1:abc"))
	g.Expect(r.Objects).To(HaveLen(3))

	deploy, ok := r.Object(ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "checkout"})
	g.Expect(ok).To(BeTrue())
	replicas, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas")
	g.Expect(replicas).To(Equal(int64(4)))
	g.Expect(deploy.GetLabels()).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/name", "shop"))
	g.Expect(deploy.GetLabels()).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/namespace", "flux-system"))

	// The origin index points the overlay's replicas at its line.
	g.Expect(r.IndexErr).ToNot(HaveOccurred())
	o, err := r.Index.Lookup(origin.RefOf(deploy), "/spec/replicas")
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(o.File).To(Equal("overlays/prod/kustomization.yaml"))
	g.Expect(o.Kind).To(Equal(origin.Kind("replicas")))

	// Same revision and generation: served from the cache.
	_, err = cache.Get(context.Background(), Request{Kustomization: ks, Artifact: artifact})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(atomic.LoadInt32(hits)).To(Equal(int32(1)))

	// A new generation of the Kustomization renders again.
	ks.Generation = 2
	_, err = cache.Get(context.Background(), Request{Kustomization: ks, Artifact: artifact})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(atomic.LoadInt32(hits)).To(Equal(int32(2)))
}

func TestCacheRefusesOtherRevisions(t *testing.T) {
	g := NewWithT(t)
	artifact, hits := artifactServer(t, tarball(t, "testdata/shop"))
	cache := NewCache(NewFetcher(1, 10<<20, 10<<20))

	ks := shopKustomization()
	ks.Status.LastAppliedRevision = "main@sha1:old"
	_, err := cache.Get(context.Background(), Request{Kustomization: ks, Artifact: artifact})
	g.Expect(err).To(MatchError(ErrRevisionUnavailable))
	g.Expect(err.Error()).To(ContainSubstring("applied main@sha1:old, source serves main@sha1:abc"))

	ks.Status.LastAppliedRevision = ""
	_, err = cache.Get(context.Background(), Request{Kustomization: ks, Artifact: artifact})
	g.Expect(err).To(MatchError(ErrRevisionUnavailable))
	g.Expect(atomic.LoadInt32(hits)).To(Equal(int32(0)), "nothing is fetched for a revision that cannot match")

	// A digest mismatch is an error and is not cached.
	ks = shopKustomization()
	bad := *artifact
	bad.Digest = "sha256:" + hex.EncodeToString(make([]byte, 32))
	_, err = cache.Get(context.Background(), Request{Kustomization: ks, Artifact: &bad})
	g.Expect(err).To(HaveOccurred())
	r, err := cache.Get(context.Background(), Request{Kustomization: ks, Artifact: artifact})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(r.Objects).To(HaveLen(3))
}

// TestEncryptedObjectsAreNotCompared: Flux decrypts SOPS documents with
// keys reflux does not hold, so they are left out of the desired state
// instead of being compared as ciphertext.
func TestEncryptedObjectsAreNotCompared(t *testing.T) {
	g := NewWithT(t)
	artifact, _ := artifactServer(t, tarball(t, "testdata/shop-sops"))
	r, err := NewCache(NewFetcher(1, 10<<20, 10<<20)).Get(context.Background(), Request{Kustomization: shopKustomization(), Artifact: artifact})
	g.Expect(err).ToNot(HaveOccurred())
	secret := ObjectKey{Kind: "Secret", Namespace: "shop", Name: "checkout-db"}
	_, ok := r.Object(secret)
	g.Expect(ok).To(BeFalse())
	g.Expect(r.Encrypted).To(ConsistOf(secret))
	g.Expect(r.Objects).To(HaveLen(3), "everything else is still desired")
}
