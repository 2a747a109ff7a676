package tenancy

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The clients' requests are proven against the real apiserver in
// controllers (TestImpersonation*) and e2e/tenancy; this is the cache.
func TestClientsCacheIsBounded(t *testing.T) {
	g := NewWithT(t)
	// An address nothing listens on: building a client must not dial.
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	opts := client.Options{Scheme: runtime.NewScheme(), Mapper: meta.NewDefaultRESTMapper([]schema.GroupVersion{})}
	c, err := NewClients(cfg, opts, 2)
	g.Expect(err).NotTo(HaveOccurred())

	a1, err := c.For("system:serviceaccount:a:tenant")
	g.Expect(err).NotTo(HaveOccurred())
	a2, err := c.For("system:serviceaccount:a:tenant")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a2).To(BeIdenticalTo(a1), "one client per identity")
	for _, u := range []string{"system:serviceaccount:b:tenant", "system:serviceaccount:c:tenant"} {
		_, err := c.For(u)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(c.Len()).To(Equal(2), "bounded")
	a3, err := c.For("system:serviceaccount:a:tenant")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a3).NotTo(BeIdenticalTo(a1), "the least recently used was evicted, and is rebuilt")
	g.Expect(cfg.Impersonate.UserName).To(BeEmpty(), "the base config is never changed")

	_, err = c.For("")
	g.Expect(err).To(HaveOccurred())
	_, err = NewClients(cfg, client.Options{}, 0)
	g.Expect(err).To(HaveOccurred(), "a Mapper is required, or each client would discover")
}
