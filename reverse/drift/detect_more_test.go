package drift

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDetectScaleSubresource checks that replicas written the way the HPA
// writes them, through the scale subresource as kube-controller-manager,
// are not drift, whether Git leaves replicas out (as it should) or not.
func TestDetectScaleSubresource(t *testing.T) {
	for name, manifest := range map[string]string{"undeclared": autoscaledYAML, "declared": deploymentYAML} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), manifest)
			fluxApply(t, git)
			deploy := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(git), deploy)).To(Succeed())
			scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 4}}
			g.Expect(k8sClient.SubResource("scale").Update(context.Background(), deploy,
				client.WithSubResourceBody(scale), client.FieldOwner("kube-controller-manager"))).To(Succeed())

			live := get(t, git)
			g.Expect(live.Object["spec"].(map[string]any)["replicas"]).To(BeEquivalentTo(4))
			in := Input{Desired: git, Live: live}
			res, err := newDetector(t).Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			expectInProcessAgrees(g, t, in, res)
			g.Expect(res.Fields).To(BeEmpty())
		})
	}
}

// TestDetectPendingRevision checks that a Git change Flux has not applied
// yet is not live drift: the live value is still Flux's own.
func TestDetectPendingRevision(t *testing.T) {
	g := NewWithT(t)
	applied := object(t, newNamespace(t), deploymentYAML)
	fluxApply(t, applied)
	next := applied.DeepCopy()
	g.Expect(unstructured.SetNestedField(next.Object, int64(4), "spec", "replicas")).To(Succeed())
	in := Input{Desired: next, Live: get(t, applied)}
	res, err := newDetector(t).Detect(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	expectInProcessAgrees(g, t, in, res)
	g.Expect(res.Fields).To(BeEmpty())
}

// TestDetectAllowList checks that the allow-list is configurable: a manager
// added to it writes no drift; the defaults can be dropped.
func TestDetectAllowList(t *testing.T) {
	g := NewWithT(t)
	git := object(t, newNamespace(t), configMapYAML)
	fluxApply(t, git)
	edit(t, git, "legacy-app", func(u map[string]any) { set(t, u, "3", "data", "c") })
	live := get(t, git)

	allowing := newDetector(t, WithAllowedManagers(append(DefaultAllowedManagers(), "legacy-app")...))
	res, err := allowing.Detect(context.Background(), Input{Desired: git, Live: live})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Fields).To(BeEmpty())

	overriding := newDetector(t, WithOverrideManagers("legacy-app"))
	res, err = overriding.Detect(context.Background(), Input{Desired: git, Live: live})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got(g, res.Fields)).To(Equal([]want{{Pointer: "/data/c", ChangeType: "Add", LiveValue: `"3"`,
		FluxReverts: true, Manager: "legacy-app", Operation: "Update"}}))
}

// TestDetectFluxControllersFinalizer checks that the finalizer a Flux
// controller adds to an object it reconciles (helm-controller's to a
// HelmRelease a Kustomization applies) is not drift by default, while the
// same write by anyone else is. (Flux's own name, finalizers.fluxcd.io,
// is valid only on its custom resources.)
func TestDetectFluxControllersFinalizer(t *testing.T) {
	for _, tc := range []struct {
		manager string
		drift   bool
	}{{"helm-controller", false}, {"source-controller", false}, {"finalizer-bot", true}} {
		t.Run(tc.manager, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), configMapYAML)
			fluxApply(t, git)
			edit(t, git, tc.manager, func(u map[string]any) {
				g.Expect(unstructured.SetNestedStringSlice(u, []string{"example.com/guard"}, "metadata", "finalizers")).To(Succeed())
			})
			res, err := newDetector(t, WithAllowedManagers(DefaultAllowedManagers()...)).Detect(context.Background(),
				Input{Desired: git, Live: get(t, git)})
			g.Expect(err).NotTo(HaveOccurred())
			if tc.drift {
				g.Expect(got(g, res.Fields)).To(ConsistOf(HaveField("Pointer", "/metadata/finalizers/0")))
			} else {
				g.Expect(res.Fields).To(BeEmpty())
			}
		})
	}
}

// TestDetectFluxRequestsAreNotDrift: `flux reconcile` annotates the Flux
// object it asks about (a HelmRelease, a GitRepository a Kustomization
// applies) to make its controller act now; those requests are never
// drift, while an annotation of the same write that is not one is.
func TestDetectFluxRequestsAreNotDrift(t *testing.T) {
	g := NewWithT(t)
	git := object(t, newNamespace(t), configMapYAML)
	fluxApply(t, git)
	edit(t, git, "flux", func(u map[string]any) {
		g.Expect(unstructured.SetNestedStringMap(u, map[string]string{
			"reconcile.fluxcd.io/requestedAt": "2026-12-05T12:00:00Z",
			"reconcile.fluxcd.io/forceAt":     "2026-12-05T12:00:00Z",
			"example.com/owner":               "payments",
		}, "metadata", "annotations")).To(Succeed())
	})
	res, err := newDetector(t, WithAllowedManagers(DefaultAllowedManagers()...)).Detect(context.Background(),
		Input{Desired: git, Live: get(t, git)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got(g, res.Fields)).To(ConsistOf(HaveField("Pointer", "/metadata/annotations/example.com~1owner")))
}

// TestDetectWithoutOwnerLabels checks that a rendered object without the
// labels kustomize-controller adds at apply time shows no drift.
func TestDetectWithoutOwnerLabels(t *testing.T) {
	g := NewWithT(t)
	git := object(t, newNamespace(t), deploymentYAML)
	fluxApply(t, git)
	rendered := git.DeepCopy()
	rendered.SetLabels(nil)
	in := Input{Desired: rendered, Live: get(t, git)}
	res, err := newDetector(t).Detect(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	expectInProcessAgrees(g, t, in, res)
	g.Expect(res.Fields).To(BeEmpty())
}

// TestDetectStale checks that a live object older than the cluster's is
// refused rather than compared against a merge of a newer one.
func TestDetectStale(t *testing.T) {
	g := NewWithT(t)
	git := object(t, newNamespace(t), configMapYAML)
	fluxApply(t, git)
	old := get(t, git)
	edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, "3", "data", "c") })

	_, err := newDetector(t).Detect(context.Background(), Input{Desired: git, Live: old})
	g.Expect(errors.Is(err, ErrStale)).To(BeTrue(), "got %v", err)
}

// TestDetectInvalidInput checks the input is checked before any request.
func TestDetectInvalidInput(t *testing.T) {
	git := object(t, "default", configMapYAML)
	other := git.DeepCopy()
	other.SetName("other")
	elsewhere := git.DeepCopy()
	elsewhere.SetNamespace("elsewhere")
	otherVersion := git.DeepCopy()
	otherVersion.SetAPIVersion("v2")
	for name, in := range map[string]Input{
		"no live":          {Desired: git},
		"no desired":       {Live: git},
		"other name":       {Desired: git, Live: other},
		"other namespace":  {Desired: git, Live: elsewhere},
		"no managedFields": {Desired: git, Live: git},
		"other version":    {Desired: git, Live: otherVersion},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := newDetector(t).Detect(context.Background(), in)
			g.Expect(errors.Is(err, ErrInvalidInput)).To(BeTrue(), "got %v", err)
		})
	}
}

// TestDetectOneRequest checks the cost the benchmark reports: exactly one
// API request per call, whatever drifted.
func TestDetectOneRequest(t *testing.T) {
	g := NewWithT(t)
	counted, requests := countingClient(t)
	d, err := New(counted)
	g.Expect(err).NotTo(HaveOccurred())
	git := object(t, newNamespace(t), deploymentYAML)
	fluxApply(t, git)
	// Warm the client's REST mapper, which discovers each group once.
	_, err = d.Detect(context.Background(), Input{Desired: git, Live: get(t, git)})
	g.Expect(err).NotTo(HaveOccurred())

	edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, int64(5), "spec", "replicas") })
	live := get(t, git)
	requests.Store(0)
	res, err := d.Detect(context.Background(), Input{Desired: git, Live: live})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Fields).To(HaveLen(1))
	g.Expect(requests.Load()).To(BeEquivalentTo(1))
}

// countingClient returns a client whose HTTP requests are counted.
func countingClient(t testing.TB) (client.Client, *atomic.Int64) {
	t.Helper()
	requests := &atomic.Int64{}
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(r)
		})
	})
	cl, err := client.New(c, client.Options{})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return cl, requests
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
