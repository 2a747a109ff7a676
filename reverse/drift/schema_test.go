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
