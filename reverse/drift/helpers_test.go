package drift

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

var nsCount atomic.Int32

// newNamespace creates a namespace for one test.
func newNamespace(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("drift-%d", nsCount.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}

// object parses a manifest as Git renders it and places it in ns, with the
// labels kustomize-controller sets on everything it applies.
func object(t testing.TB, ns, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.TrimSpace(manifest)), &u.Object); err != nil {
		t.Fatalf("parsing manifest: %v", err)
	}
	u.SetNamespace(ns)
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["kustomize.toolkit.fluxcd.io/name"] = "apps"
	labels["kustomize.toolkit.fluxcd.io/namespace"] = "flux-system"
	u.SetLabels(labels)
	return u
}

// fluxApply creates or updates obj the way kustomize-controller does: a
// server-side apply as its field owner with forced ownership.
func fluxApply(t testing.TB, obj *unstructured.Unstructured) {
	t.Helper()
	if err := k8sClient.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
		client.FieldOwner(DefaultFieldOwner), client.ForceOwnership); err != nil {
		t.Fatalf("applying %s: %v", obj.GetName(), err)
	}
}

// get reads the live object, as a watch event would deliver it.
func get(t testing.TB, like *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(like.GroupVersionKind())
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(like), live); err != nil {
		t.Fatalf("getting %s: %v", like.GetName(), err)
	}
	return live
}

// edit changes the live object with an Update under manager, as kubectl
// edit, kubectl set or another client would.
func edit(t testing.TB, like *unstructured.Unstructured, manager string, mutate func(u map[string]any)) {
	t.Helper()
	live := get(t, like)
	mutate(live.Object)
	if err := k8sClient.Update(context.Background(), live, client.FieldOwner(manager)); err != nil {
		t.Fatalf("updating %s as %s: %v", like.GetName(), manager, err)
	}
}

// set sets a nested field, failing the test on a bad path.
func set(t testing.TB, u map[string]any, value any, path ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(u, value, path...); err != nil {
		t.Fatalf("setting %v: %v", path, err)
	}
}

// containers returns the Deployment's containers for editing in place.
func containers(u map[string]any) []any {
	c, _, _ := unstructured.NestedFieldNoCopy(u, "spec", "template", "spec", "containers")
	list, _ := c.([]any)
	return list
}

// want is an expected field; Modifier is only the manager and operation,
// since the time is the apiserver's.
type want struct {
	Pointer     string
	ChangeType  string
	GitValue    string
	LiveValue   string
	FluxReverts bool
	Manager     string
	Operation   string
}

// got reduces fields to wants, checking that every modifier has a time.
func got(g Gomega, fields []Field) []want {
	out := []want{}
	for _, f := range fields {
		w := want{Pointer: f.Pointer, ChangeType: string(f.ChangeType), GitValue: f.GitValue,
			LiveValue: f.LiveValue, FluxReverts: f.FluxReverts}
		if f.Modifier != nil {
			g.Expect(f.Modifier.Time).NotTo(BeNil(), "modifier time of %s", f.Pointer)
			w.Manager, w.Operation = f.Modifier.Manager, f.Modifier.Operation
		}
		out = append(out, w)
	}
	return out
}

func newDetector(t testing.TB, opts ...Option) *Detector {
	t.Helper()
	d, err := New(k8sClient, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

// inProcessCannot names the tests whose cases the in-process comparison
// cannot reproduce, with the reason.
var inProcessCannot = map[string]string{
	"TestDetectImmutable": "immutability is the apiserver's validation (k8s.io/kubernetes), which the in-process merge does not run; " +
		"it reports the merge's fields and never sets Immutable or Recreate",
}

// inProcessDetector returns a Detector using the in-process comparison,
// typed by the test apiserver's OpenAPI v3 documents.
func inProcessDetector(t testing.TB, opts ...Option) *Detector {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatalf("discovery client: %v", err)
	}
	return newDetector(t, append(opts, WithInProcessComparison(NewOpenAPITypes(dc.OpenAPIV3())))...)
}

// expectInProcessAgrees checks that the in-process comparison gives
// exactly the dry run's result, modifiers and their times included.
// Tests named in inProcessCannot are the cases it cannot agree on, by
// design (see the package doc); they log why instead.
func expectInProcessAgrees(g Gomega, t testing.TB, in Input, dry Result) {
	t.Helper()
	for name, why := range inProcessCannot {
		if strings.HasPrefix(t.Name(), name+"/") {
			t.Logf("in-process comparison not checked: %s", why)
			return
		}
	}
	res, err := inProcessDetector(t).Detect(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(dry), "in-process comparison differs from the dry run")
}
