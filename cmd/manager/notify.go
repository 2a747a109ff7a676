package manager

import (
	"context"
	"sync"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// notifier turns the engine's and the renderer's "something changed for
// this Kustomization" into reconcile requests. Send never blocks (it is
// called from workers that must not wait on the reconciler); a pump
// delivers each pending key once, however often it was sent.
type notifier struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]bool
	wake    chan struct{}
	out     chan event.TypedGenericEvent[client.Object]
}

func newNotifier() *notifier {
	return &notifier{pending: map[types.NamespacedName]bool{}, wake: make(chan struct{}, 1),
		out: make(chan event.TypedGenericEvent[client.Object])}
}

// Send asks for a reconcile of id.
func (n *notifier) Send(id types.NamespacedName) {
	n.mu.Lock()
	n.pending[id] = true
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Start pumps pending keys to the controller until ctx ends.
func (n *notifier) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.wake:
		}
		n.mu.Lock()
		ids := make([]types.NamespacedName, 0, len(n.pending))
		for id := range n.pending {
			ids = append(ids, id)
		}
		n.pending = map[types.NamespacedName]bool{}
		n.mu.Unlock()
		for _, id := range ids {
			ks := &kustomizev1.Kustomization{}
			ks.Namespace, ks.Name = id.Namespace, id.Name
			select {
			case n.out <- event.TypedGenericEvent[client.Object]{Object: ks}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// relay hands HelmReleases to reconcile again to the HelmRelease
// reconciler once it has registered (On); those sent before are dropped,
// as the reconciler lists every HelmRelease when it starts. Send never
// blocks.
type relay struct {
	mu sync.Mutex
	fn func(types.NamespacedName)
}

// Send asks for a reconcile of id.
func (r *relay) Send(id types.NamespacedName) {
	r.mu.Lock()
	fn := r.fn
	r.mu.Unlock()
	if fn != nil {
		fn(id)
	}
}

// On registers fn, which must not block.
func (r *relay) On(fn func(types.NamespacedName)) {
	r.mu.Lock()
	r.fn = fn
	r.mu.Unlock()
}
