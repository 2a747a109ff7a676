package faithful

import (
	"context"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFaithful checks, for every corpus case, that what reflux renders is
// what kustomize-controller applied: the same set of objects in its
// inventory, and every rendered leaf live with the same value.
func TestFaithful(t *testing.T) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			g := NewWithT(t)
			ks, err := settled(context.Background(), c)
			g.Expect(err).NotTo(HaveOccurred())
			ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			if c.BuildErr != nil {
				g.Expect(ready.Reason).To(Equal(meta.BuildFailedReason),
					"reflux cannot build %s (%v) but Flux did: %s", c.Name, c.BuildErr, ready.Message)
				t.Logf("neither builds: reflux: %v; Flux: %s", c.BuildErr, ready.Message)
				return
			}
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Flux did not apply %s: %s", c.Name, ready.Message)
			g.Expect(inventoryIDs(ks)).To(Equal(renderedIDs(c.Render.Objects)),
				"Flux's inventory differs from reflux's render (Ready: %s: %s; applied %s)",
				ready.Reason, ready.Message, ks.Status.LastAppliedRevision)
			leaves := 0
			for _, obj := range c.Render.Objects {
				got, err := diffLive(context.Background(), obj, ks)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got.Mismatches).To(BeEmpty(),
					"%s: reflux's render differs from what Flux applied", inventoryID(obj))
				leaves += got.Leaves
			}
			t.Logf("%d objects, %d leaves equal to what Flux applied", len(c.Render.Objects), leaves)
		})
	}
}

// liveDiff is compare's outcome with the mismatches as text, so a failure
// names each pointer with both values.
type liveDiff struct {
	Mismatches []string
	Leaves     int
}

// diffLive GETs the live object for rendered and compares it with what
// kustomize-controller sends for rendered.
func diffLive(ctx context.Context, rendered *unstructured.Unstructured, ks *kustomizev1.Kustomization) (liveDiff, error) {
	want, err := expected(rendered, ks)
	if err != nil {
		return liveDiff{}, err
	}
	live, err := getLive(ctx, rendered)
	if err != nil {
		return liveDiff{}, err
	}
	c := compare(want, live)
	out := liveDiff{Leaves: c.Leaves}
	for _, m := range c.Mismatches {
		out.Mismatches = append(out.Mismatches, m.String())
	}
	return out, nil
}

// getLive reads the live object with rendered's GVK, namespace and name.
func getLive(ctx context.Context, rendered *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(rendered.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rendered), live); err != nil {
		return nil, fmt.Errorf("getting %s: %w", inventoryID(rendered), err)
	}
	return live, nil
}

// settled waits until kustomize-controller has finished with the case's
// Kustomization: Ready=True, or Ready=False for a reason a retry would not
// change (the build or the apply failed). Waiting for Ready alone would
// turn a Flux refusal into a timeout and hide its message.
//
// Ready alone is not enough for success either: Flux's patch helper writes
// the conditions before the rest of the status, so Ready=True can be read
// while .status.inventory is still the old one. lastAppliedRevision is set
// after the inventory and lands in the same status patch.
func settled(ctx context.Context, c *fluxCase) (*kustomizev1.Kustomization, error) {
	ks := &kustomizev1.Kustomization{}
	key := client.ObjectKey{Namespace: c.Namespace, Name: c.Kustomization.Name}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, settleTimeout, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, key, ks); err != nil {
			return false, err
		}
		ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
		if ready == nil || ready.ObservedGeneration != ks.Generation {
			return false, nil
		}
		last = ready.Reason + ": " + ready.Message
		if ready.Status == metav1.ConditionTrue {
			applied := ks.Status.LastAppliedRevision
			return applied != "" && applied == ks.Status.LastAttemptedRevision, nil
		}
		return terminal(ready.Reason) && ks.Status.LastAttemptedRevision != "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for Flux to settle %s (last Ready: %s): %w", key, last, err)
	}
	return ks, nil
}

// terminal reports Ready reasons that mean kustomize-controller built or
// applied the revision and failed, rather than still waiting for a source.
func terminal(reason string) bool {
	return reason == meta.BuildFailedReason || reason == meta.ReconciliationFailedReason
}

// settleTimeout bounds the wait for one case. Every case was submitted
// before the tests started, so later cases have had most of it already.
const settleTimeout = 90 * time.Second
