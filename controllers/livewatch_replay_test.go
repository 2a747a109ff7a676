package controllers

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/reverse/intake"
)

// addsSeen counts the objects a watch handed its handler as listed.
type addsSeen struct {
	ignoreLive
	mu   sync.Mutex
	adds map[string]int
}

func (a *addsSeen) OnLiveAdd(_ schema.GroupVersionKind, cur *unstructured.Unstructured, _ time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.adds[cur.GetName()]++
}

func (a *addsSeen) take() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.adds
	a.adds = map[string]int{}
	return out
}

// TestWatcherHandsALaterKustomizationWhatItsKindListed runs a Watcher
// against the real apiserver. The ConfigMap watch starts for one
// Kustomization and lists both Kustomizations' ConfigMaps; the second
// Kustomization, governed after that list, is handed its own objects when
// it is first watched, and only then: without it, a held or edited object
// of a Kustomization a new leader governs after the first waited for the
// resync.
func TestWatcherHandsALaterKustomizationWhatItsKindListed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "watch-replay"
	g.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	first, later := types.NamespacedName{Namespace: ns, Name: "first"}, types.NamespacedName{Namespace: ns, Name: "later"}
	for name, owner := range map[string]types.NamespacedName{"first-flags": first, "later-flags": later} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{intake.FluxNameLabel: owner.Name, intake.FluxNamespaceLabel: owner.Namespace}}}
		g.Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		t.Cleanup(func() {
			_ = k8sClient.Delete(context.Background(), cm, client.PropagationPolicy(metav1.DeletePropagationBackground))
		})
	}
	dyn, err := dynamic.NewForConfig(testEnv.Config)
	g.Expect(err).NotTo(HaveOccurred())
	seen := &addsSeen{adds: map[string]int{}}
	w := NewWatcher(dyn, k8sClient.RESTMapper(), WatcherOptions{Namespaces: []string{ns}, OwnerOf: intake.OwnerOf, Log: logr.Discard()})
	w.Handle(seen)
	t.Cleanup(w.Stop)
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

	g.Expect(w.Ensure(first, []schema.GroupVersionKind{cm})).To(Succeed())
	g.Eventually(func() bool { return w.ListedFor(first) }).WithTimeout(watchTimeout).Should(BeTrue())
	g.Eventually(seen.take).WithTimeout(watchTimeout).Should(Equal(map[string]int{"first-flags": 1, "later-flags": 1}),
		"the watch lists every Kustomization's objects")

	g.Expect(w.Ensure(later, []schema.GroupVersionKind{cm})).To(Succeed())
	g.Expect(seen.take()).To(Equal(map[string]int{"later-flags": 1}), "the later Kustomization is handed its own objects, at once")
	g.Expect(w.Ensure(later, []schema.GroupVersionKind{cm})).To(Succeed())
	g.Expect(w.Ensure(first, []schema.GroupVersionKind{cm})).To(Succeed())
	g.Expect(seen.take()).To(BeEmpty(), "a Kustomization watched already is handed nothing again")

	w.Forget(later)
	g.Expect(w.Ensure(later, []schema.GroupVersionKind{cm})).To(Succeed())
	g.Expect(seen.take()).To(Equal(map[string]int{"later-flags": 1}), "one watched again after it was forgotten is")
}
