package faithful

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/reverse/drift"
)

// inProcessAnnotation is the drift TestInProcessAgreesOnCorpus adds as
// kubectl would: an annotation Git does not declare, which Flux reverts.
const inProcessAnnotation = "example.com/in-process-check"

// TestInProcessAgreesOnCorpus checks the in-process comparison
// (drift.WithInProcessComparison) against the server-side dry run on every
// object of every corpus case Flux applied: each gets a kubectl-edit
// annotation, then both comparisons of the live object with reflux's
// render must give the same result, field for field. It covers every kind
// and shape the corpus renders (CRDs and custom resources, RBAC, Services,
// Ingresses, Secrets, workloads), so a type the OpenAPI schema merges
// differently from the apiserver shows up here. The limits of the package
// doc (defaulting of merged-in fields, admission, validation) do not arise:
// the corpus objects are as Flux applied them, with no webhooks.
func TestInProcessAgreesOnCorpus(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	dryRun, err := drift.New(env.Client)
	if err != nil {
		t.Fatal(err)
	}
	inProcess, err := drift.New(env.Client, drift.WithInProcessComparison(drift.NewOpenAPITypes(dc.OpenAPIV3())))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			g := NewWithT(t)
			ks, err := settled(context.Background(), c)
			g.Expect(err).NotTo(HaveOccurred())
			if c.BuildErr != nil {
				t.Skipf("reflux cannot build %s (%v): no render to compare with", c.Name, c.BuildErr)
			}
			if ks.Status.LastAppliedRevision == "" {
				t.Skipf("Flux applied nothing of %s", c.Name)
			}
			for _, obj := range c.Render.Objects {
				ctx := context.Background()
				// The corpus is shared with the suite's other tests, which
				// compare the live objects with what Flux applied: the
				// drift comes back out, also when this check fails.
				t.Cleanup(func() {
					live, err := getLive(ctx, obj)
					if err != nil {
						t.Errorf("taking the drift out of %s: %v", inventoryID(obj), err)
						return
					}
					unannotate := client.RawPatch(types.MergePatchType,
						[]byte(`{"metadata":{"annotations":{"`+inProcessAnnotation+`":null}}}`))
					if err := env.Client.Patch(ctx, live, unannotate, client.FieldOwner("kubectl-edit")); err != nil {
						t.Errorf("taking the drift out of %s: %v", inventoryID(obj), err)
					}
				})
				g.Eventually(func(g Gomega) {
					live, err := getLive(ctx, obj)
					g.Expect(err).NotTo(HaveOccurred())
					if live.GetAnnotations()[inProcessAnnotation] == "" {
						ann := live.GetAnnotations()
						if ann == nil {
							ann = map[string]string{}
						}
						ann[inProcessAnnotation] = "x"
						live.SetAnnotations(ann)
						g.Expect(env.Client.Update(ctx, live, client.FieldOwner("kubectl-edit"))).To(Succeed())
					}
					in := drift.Input{Desired: obj, Live: live}
					want, err := dryRun.Detect(ctx, in)
					if errors.Is(err, drift.ErrStale) {
						g.Expect(err).NotTo(HaveOccurred(), "changed meanwhile; again")
					}
					g.Expect(err).NotTo(HaveOccurred())
					got, err := inProcess.Detect(ctx, in)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(got).To(Equal(want), "%s: in-process comparison differs from the dry run", inventoryID(obj))
					if want.Skipped == "" {
						g.Expect(want.Fields).NotTo(BeEmpty(), "%s: the annotation is drift", inventoryID(obj))
					}
				}, settleTimeout, 250*time.Millisecond).Should(Succeed())
			}
		})
	}
}
