package journey

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// breakGlassGroup is the policy's fromGroups entry in this journey; dana
// is in it, and only in it.
const breakGlassGroup = "oncall-breakglass"

// TestAuditDerivedHotfixIsHeldAnnotatedAndNeverBranched (issue 11,
// audit-derived intent): a member of a fromGroups group edits a
// Flux-managed object without the annotation. The audit log makes the
// drift a manual hotfix: the record names the user and groups that decided
// it, the object is held and annotated under reflux's field manager, a
// Normal event is emitted, and no branch is pushed.
func TestAuditDerivedHotfixIsHeldAnnotatedAndNeverBranched(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	f := fixture.NewApp(t, env, "intent", fixture.AppOptions{Files: fixture.OneFile("worker.yaml", workerYAML),
		Policy: func(p *refluxv1.ReverseSyncPolicy) {
			p.Spec.ManualHotfix = refluxv1.ManualHotfix{Key: refluxv1.DefaultManualHotfixKey, Value: refluxv1.DefaultManualHotfixValue,
				FromGroups: []string{breakGlassGroup}}
		}})
	ks := f.Kustomization()
	// The aggregated admin and edit roles are empty without
	// kube-controller-manager, so the break-glass role is spelled out.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: breakGlassGroup, Namespace: f.Name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/scale"},
			Verbs: []string{"get", "list", "watch", "patch", "update"}}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: breakGlassGroup, Namespace: f.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: breakGlassGroup}},
	}
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	dana, err := env.AddUser("dana@example.com", breakGlassGroup)
	g.Expect(err).NotTo(HaveOccurred())
	before := env.Git.Requests(f.Repo)

	g.Eventually(func() error {
		// The RoleBinding reaches the authorizer's cache a moment later.
		_, err := env.KubectlAs(ctx, dana, "-n", f.Name, "scale", "deployment/worker", "--replicas=3")
		return err
	}, fixture.Timeout, fixture.Interval).Should(Succeed())

	rec := f.WaitRecord(g, "Deployment", "worker", func(d *refluxv1.Drift) error {
		if !d.Spec.ManualHotfix || d.Spec.ManualHotfixBy == nil || d.Status.State != refluxv1.DriftHeld {
			return fmt.Errorf("record %s is %q, manual hotfix %v by %+v", d.Name, d.Status.State, d.Spec.ManualHotfix, d.Spec.ManualHotfixBy)
		}
		return nil
	})
	by := rec.Spec.ManualHotfixBy
	g.Expect(by.User).To(Equal(dana.Name))
	g.Expect(by.Groups).To(ContainElement(breakGlassGroup))
	g.Expect(by.Matched).To(Equal("group:" + breakGlassGroup))
	g.Expect(by.MarkedKey).To(Equal(refluxv1.DefaultManualHotfixKey), "the record says reflux adds the annotation")
	fl, err := fixture.Field(rec, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fl.Action).To(Equal(refluxv1.IgnoreAction), "a hotfix is never written")
	g.Expect(fl.Rule).To(Equal("manual-hotfix"))
	g.Expect(fl.Modifier.User).To(Equal(dana.Name))
	g.Expect(fl.Modifier.Groups).To(ContainElement(breakGlassGroup))

	// reflux annotated the object itself, under its own field manager.
	g.Eventually(func() error {
		d := f.Get(g, "worker", &appsv1.Deployment{}).(*appsv1.Deployment)
		if d.Annotations[refluxv1.DefaultManualHotfixKey] != refluxv1.DefaultManualHotfixValue {
			return fmt.Errorf("annotations %v", d.Annotations)
		}
		for _, mf := range d.ManagedFields {
			if mf.Manager == refluxv1.FieldManager && mf.FieldsV1 != nil &&
				strings.Contains(string(mf.FieldsV1.Raw), `"f:`+refluxv1.DefaultManualHotfixKey+`"`) {
				return nil
			}
		}
		return fmt.Errorf("no %s managedFields entry owns the annotation", refluxv1.FieldManager)
	}, fixture.Timeout, fixture.Interval).Should(Succeed())

	ev := f.Event(g, "ManualHotfix", "worker")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeNormal))

	g.Expect(fixture.Held(f.Get(g, "worker", &appsv1.Deployment{}))).To(BeTrue())
	f.Reconcile(g, ks.Name)
	g.Expect(*f.Get(g, "worker", &appsv1.Deployment{}).(*appsv1.Deployment).Spec.Replicas).To(BeEquivalentTo(3), "held against Flux")
	g.Consistently(func() []string { return fixture.Branches(t, env, f.Repo) }, 3*time.Second, 500*time.Millisecond).Should(BeEmpty())
	g.Expect(env.Git.Requests(f.Repo).Sub(before).ReceivePack).To(BeZero(), "nothing was pushed")
	// The record still names who decided, after reflux's own write.
	g.Expect(f.Records(g, "Deployment", "worker")[0].Spec.ManualHotfixBy).To(Equal(by))

	// Dismissed: the hold and reflux's annotation go, and Flux restores Git.
	_, err = env.Kubectl(ctx, "-n", f.Name, "annotate", "drift/"+rec.Name, refluxv1.DismissAnnotation+"=true")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error {
		d := f.Get(g, "worker", &appsv1.Deployment{}).(*appsv1.Deployment)
		if _, ok := d.Annotations[refluxv1.DefaultManualHotfixKey]; ok || fixture.Held(d) || *d.Spec.Replicas != 1 {
			return fmt.Errorf("annotations %v, replicas %d", d.Annotations, *d.Spec.Replicas)
		}
		return nil
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
}
