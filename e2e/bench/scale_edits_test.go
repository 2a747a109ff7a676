package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

const (
	// moveOn is how long one edit may take before the next is made
	// anyway. A slow or missed edit then costs the run seconds, not
	// minutes; its hold and record are still timed when they come.
	moveOn = 10 * time.Second
	// lostAfter is how long after its acknowledgement an edit may take to
	// be held and recorded before it counts as lost.
	lostAfter = 2 * time.Minute
)

// editResult is one live edit's outcome: how long after the apiserver
// acknowledged it the benchmark's watches saw the hold and the Held
// record, each only when seen within lostAfter.
type editResult struct {
	target         target
	hold, record   time.Duration
	held, recorded bool
	acked          time.Time
}

// lost reports whether the edit missed its hold or its record.
func (r editResult) lost() bool { return !r.held || !r.recorded }

// makeEdits edits targets one after another as the editor, each as
// `kubectl edit` does (a GET, then an Update under field manager
// kubectl-edit) to a value never seen before, waiting up to moveOn for
// each to be held and recorded. Then it waits for the stragglers until
// lostAfter has passed since each was acknowledged.
func makeEdits(ctx context.Context, editor client.Client, o *observer, targets []target, run string) ([]editResult, error) {
	edits := make([]*edit, 0, len(targets))
	for i, t := range targets {
		e, err := editOnce(ctx, editor, o, t, fmt.Sprintf("scale-%s-%d", run, i))
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
		if err := waitDone(ctx, e.done, moveOn); err != nil {
			return nil, err
		}
	}
	out := make([]editResult, 0, len(edits))
	for _, e := range edits {
		acked, _, _ := o.result(e)
		if err := waitDone(ctx, e.done, time.Until(acked.Add(lostAfter))); err != nil {
			return nil, err
		}
		out = append(out, resultOf(o, e))
	}
	return out, nil
}

// editOnce reads t, checks it is not held yet (every edit must be a new
// drift), and sets its VALUE to value. A conflict with another writer is
// retried from a fresh read, as a user would.
func editOnce(ctx context.Context, editor client.Client, o *observer, t target, value string) (*edit, error) {
	var e *edit
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := &corev1.ConfigMap{}
		if err := editor.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Name}, cm); err != nil {
			return err
		}
		if fixture.Held(cm) {
			return fmt.Errorf("%s is held before the benchmark edited it", t)
		}
		cm.Data["VALUE"] = value
		e = o.expect(t, value)
		if err := editor.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
			return err
		}
		o.acknowledged(e, time.Now())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("editing %s: %w", t, err)
	}
	return e, nil
}

// waitDone waits until done closes or d passes; only the context ending
// is an error.
func waitDone(ctx context.Context, done <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func resultOf(o *observer, e *edit) editResult {
	acked, heldAt, recordAt := o.result(e)
	r := editResult{target: e.target, acked: acked}
	if !heldAt.IsZero() && heldAt.Sub(acked) <= lostAfter {
		r.held, r.hold = true, max(0, heldAt.Sub(acked))
	}
	if !recordAt.IsZero() && recordAt.Sub(acked) <= lostAfter {
		r.recorded, r.record = true, max(0, recordAt.Sub(acked))
	}
	return r
}

// minEdits is the fewest live edits per case.
const minEdits = 40

// editTargets returns the ConfigMaps the case edits, max(minEdits,
// kustomizations) of them, all distinct: round-robin over the
// Kustomizations so every one of the first edits lands in a different
// one, and within a Kustomization at the middle of evenly spaced segments
// of its file, so edits reach deep into a long one as well as its head.
func editTargets(c tree) []target {
	return spreadTargets(c, max(minEdits, c.kustomizations))
}

// spreadTargets returns n distinct ConfigMaps of c, spread as
// editTargets says.
func spreadTargets(c tree, n int) []target {
	perKs := (n + c.kustomizations - 1) / c.kustomizations
	out := make([]target, 0, n)
	for i := range n {
		k, slot := i%c.kustomizations, i/c.kustomizations
		out = append(out, c.configMap(k, (2*slot+1)*c.configMapsPerKs()/(2*perKs)))
	}
	return out
}

// The person whose edits the benchmark makes: a user with a human's name
// who may edit ConfigMaps and nothing else, not the admin.
const (
	editorName  = "oncall@example.com"
	editorGroup = "reflux-scale:oncall"
)

// editorRBAC lets editorGroup read and edit ConfigMaps, as a team's
// on-call role would.
func editorRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "reflux-scale-oncall"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "update", "patch"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: editorGroup}},
	}
	return role, binding
}

// TestEditTargets checks the edits are distinct objects of the tree,
// spread over every Kustomization when there are enough edits, and reach
// past the head of a long file.
func TestEditTargets(t *testing.T) {
	for _, c := range scaleCases {
		t.Run(c.name(), func(t *testing.T) {
			g := NewWithT(t)
			targets := editTargets(c)
			g.Expect(len(targets)).To(BeNumerically(">=", 30))
			seen := map[target]bool{}
			perNS := map[string]int{}
			deepest := 0
			for _, tg := range targets {
				g.Expect(seen[tg]).To(BeFalse(), "edited twice: %s", tg)
				seen[tg] = true
				perNS[tg.Namespace]++
				i, err := configMapIndex(tg.Name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(i).To(BeNumerically("<", c.configMapsPerKs()))
				deepest = max(deepest, i)
			}
			g.Expect(perNS).To(HaveLen(min(len(targets), c.kustomizations)))
			if c.kustomizations == 1 {
				g.Expect(deepest).To(BeNumerically(">", c.configMapsPerKs()*9/10), "edits reach the end of the file")
			}
		})
	}
}
