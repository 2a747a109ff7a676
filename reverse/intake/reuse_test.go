package intake

import (
	"context"
	"maps"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse/desired"
)

// TestParkedChangesGoOnceAnOlderRenderDescribesThem (issue 20): while
// the applied revision is not rendered, a change waits only until its
// tree is known; then the older render evaluates every object the new
// revision left as it was, and the others keep waiting.
func TestParkedChangesGoOnceAnOlderRenderDescribesThem(t *testing.T) {
	g := NewWithT(t)
	in := newTestIntake(t, time.Now())
	owner := types.NamespacedName{Namespace: "flux-system", Name: "shop"}
	ks := &kustomizev1.Kustomization{}
	ks.Generation, ks.Spec.Path, ks.Spec.TargetNamespace = 2, "./overlays/prod", "shop"
	older, err := desired.Build(context.Background(), kustomize.BuildOptions{Root: "../desired/testdata/shop", Kustomization: ks}, "main@sha1:0")
	g.Expect(err).NotTo(HaveOccurred())
	e := in.govern(owner, older)

	service := Key{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Service"}, Namespace: "shop", Name: "checkout"}
	deployment := Key{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "shop", Name: "checkout"}
	deleted := Key{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Service"}, Namespace: "shop", Name: "gone"}
	for _, k := range []Key{service, deployment} {
		g.Expect(in.Park(owner, k, Change{Owner: owner})).To(BeFalse(), "%s waits: main@sha1:1's tree is not known", k)
	}
	g.Expect(in.Park(owner, deleted, Change{Owner: owner, Deleted: &unstructured.Unstructured{}})).To(BeFalse())

	// main@sha1:1 changed the Deployment's file only.
	applied := &desired.Manifest{Revision: "main@sha1:1", Files: maps.Clone(older.Files.Files)}
	applied.Files["base/deployment.yaml"] = "changed"
	gov := *e.gov
	gov.Manifests = []*desired.Manifest{applied}
	st := in.Publish(&gov, nil)

	g.Expect(st.Current).To(BeFalse())
	g.Expect(in.pending).To(HaveKey(service), "the Service goes to the live queue")
	g.Expect(e.parked).NotTo(HaveKey(service))
	g.Expect(e.parked).To(HaveKey(deployment), "the Deployment waits for main@sha1:1's render")
	g.Expect(e.parked).To(HaveKey(deleted), "a deletion waits for the applied revision's render")
	g.Expect(in.Park(owner, service, Change{Owner: owner})).To(BeTrue(), "a later change to the Service is evaluated at once")
	snap, _ := in.Snapshot(owner)
	g.Expect(snap.Revision()).To(Equal("main@sha1:1"), "what it is evaluated as: the applied revision")
}
