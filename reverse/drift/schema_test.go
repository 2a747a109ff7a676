package drift

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
)

// gatedDocs serves the apiserver's real OpenAPI v3 documents, holding the
// reads of one group-version's until the gate opens and counting them.
type gatedDocs struct {
	openapi.Client
	gated string
	gate  chan struct{}
	reads atomic.Int32
}

func (c *gatedDocs) Paths() (map[string]openapi.GroupVersion, error) {
	paths, err := c.Client.Paths()
	if err != nil {
		return nil, err
	}
	if doc, ok := paths[c.gated]; ok {
		paths[c.gated] = gatedDoc{GroupVersion: doc, docs: c}
	}
	return paths, nil
}

type gatedDoc struct {
	openapi.GroupVersion
	docs *gatedDocs
}

func (d gatedDoc) Schema(contentType string) ([]byte, error) {
	d.docs.reads.Add(1)
	<-d.docs.gate
	return d.GroupVersion.Schema(contentType)
}

// A slow document of one group-version stalls neither the lookups of
// kinds already cached nor the fetch of another group-version, and
// concurrent misses of one group-version share a single read.
func TestTypeConverterFetchesOneGroupVersionWithoutStallingOthers(t *testing.T) {
	g := NewWithT(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	docs := &gatedDocs{Client: dc.OpenAPIV3(), gated: "apis/apps/v1", gate: make(chan struct{})}
	types := NewOpenAPITypes(docs)
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	_, err = types.TypeConverter(configMap)
	g.Expect(err).NotTo(HaveOccurred(), "core/v1 is cached")

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, kind := range []string{"Deployment", "StatefulSet"} {
		wg.Go(func() {
			_, err := types.TypeConverter(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind})
			errs <- err
		})
	}
	g.Eventually(docs.reads.Load).Should(BeEquivalentTo(1), "the apps/v1 read is under way")

	done := make(chan error, 2)
	go func() {
		_, err := types.TypeConverter(configMap)
		done <- err
		_, err = types.TypeConverter(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"})
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			g.Expect(err).NotTo(HaveOccurred())
		case <-time.After(30 * time.Second):
			close(docs.gate)
			t.Fatal("a lookup waited on another group-version's document")
		}
	}

	close(docs.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(docs.reads.Load()).To(BeEquivalentTo(1), "the two apps/v1 misses shared one read")
}

// countedDocs serves the apiserver's real OpenAPI v3 documents, counting
// the listings.
type countedDocs struct {
	openapi.Client
	listings atomic.Int32
}

func (c *countedDocs) Paths() (map[string]openapi.GroupVersion, error) {
	c.listings.Add(1)
	return c.Client.Paths()
}

// TestTypeConverterRemembersAMissingKind (issue 22 §3): a kind the
// documents lack is answered from memory for missingRecheck, not by
// listing every document again on each event of its objects; after it,
// the documents are asked again, and kinds they have are unaffected.
func TestTypeConverterRemembersAMissingKind(t *testing.T) {
	g := NewWithT(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	docs := &countedDocs{Client: dc.OpenAPIV3()}
	types := NewOpenAPITypes(docs)
	now := time.Now()
	types.now = func() time.Time { return now }
	missing := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "NoSuchKind"}
	for range 50 {
		_, err := types.TypeConverter(missing)
		g.Expect(err).To(MatchError(ContainSubstring("has no kind NoSuchKind")))
	}
	g.Expect(docs.listings.Load()).To(BeEquivalentTo(1), "one listing for fifty events")
	_, err = types.TypeConverter(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	g.Expect(err).NotTo(HaveOccurred(), "the group-version's other kinds are cached")

	now = now.Add(missingRecheck)
	_, err = types.TypeConverter(missing)
	g.Expect(err).To(HaveOccurred())
	g.Expect(docs.listings.Load()).To(BeEquivalentTo(2), "asked again once the answer is old")
}

// TestFieldManagerPerKind (issue 22 §3): one field manager per kind and
// converter, not one per comparison.
func TestFieldManagerPerKind(t *testing.T) {
	g := NewWithT(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	types := NewOpenAPITypes(dc.OpenAPIV3())
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	tc, err := types.TypeConverter(cm)
	g.Expect(err).NotTo(HaveOccurred())
	m := &fieldManagers{}
	first, err := m.get(cm, tc)
	g.Expect(err).NotTo(HaveOccurred())
	again, err := m.get(cm, tc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(first))

	// A new schema (another converter) gets a new field manager.
	other, err := NewOpenAPITypes(dc.OpenAPIV3()).TypeConverter(cm)
	g.Expect(err).NotTo(HaveOccurred())
	renewed, err := m.get(cm, other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(renewed).NotTo(BeIdenticalTo(first))
}
