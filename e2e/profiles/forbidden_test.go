package profiles

import (
	"context"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestWatchForbidden runs reflux under the full profile with a
// Kustomization that applies a Widget, a CRD's kind none of reflux's
// ClusterRoles grants. The refused watch is named, with its fix, in the
// Kustomization's Drifted condition (WatchForbidden) and in one log line,
// however often the watch is retried, while the ConfigMap beside it still
// has its drift recorded. A ClusterRole labelled for aggregation, as the
// README tells users to write one, grants the kind: the condition clears
// and the Widget's drift is recorded too.
func TestWatchForbidden(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "reflux-watch-forbidden"
	a := newApp(t, "watch-forbidden", "testdata/widgets", func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.ReportOnly = true })
	r := startReflux(t, name, profile{path: "profiles/full"})

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checkout-flags", Namespace: a.Name}}
	fixture.KubectlEdit(g, env.Client, cm, func() { cm.Data["NEW_CHECKOUT"] = "true" })
	a.WaitRecord(g, "ConfigMap", "checkout-flags", fixture.HasField("/data/NEW_CHECKOUT"))
	g.Eventually(func() *metav1.Condition { return drifted(g, a) }, timeout, interval).Should(And(
		HaveField("Status", metav1.ConditionUnknown),
		HaveField("Reason", refluxv1.WatchForbiddenReason),
		HaveField("Message", MatchRegexp(`^reflux may not (list|watch) widgets\.example\.com \(kind Widget\): `+
			`grant get, list, watch and patch on it in a ClusterRole labelled rbac.reflux.dev/aggregate-to-workloads: "true"; `+
			`the other kinds are watched: 1 field\(s\) in 1 object\(s\) drifted`)),
	))

	// First a grant that forgets patch: reflux watches Widgets but may
	// not dry-run one.
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "reflux-workloads-widgets", Labels: map[string]string{refluxv1.WorkloadsAggregationLabel: "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"example.com"}, Resources: []string{"widgets"},
			Verbs: []string{"get", "list", "watch"}}},
	}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), role); err != nil {
			t.Errorf("deleting ClusterRole %s: %v", role.Name, err)
		}
	})
	g.Eventually(func() *metav1.Condition { return drifted(g, a) }, timeout, interval).Should(And(
		HaveField("Status", metav1.ConditionTrue),
		HaveField("Reason", refluxv1.DriftDetectedReason),
	), "the granted watch clears the condition")

	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	widget.SetName("gadget")
	widget.SetNamespace(a.Name)
	resize := func(size int64) func() {
		return func() { g.Expect(unstructured.SetNestedField(widget.Object, size, "spec", "size")).To(Succeed()) }
	}
	fixture.KubectlEdit(g, env.Client, widget, resize(5))
	g.Eventually(func() *metav1.Condition { return drifted(g, a) }, timeout, interval).Should(And(
		HaveField("Status", metav1.ConditionUnknown),
		HaveField("Reason", refluxv1.ActionForbiddenReason),
		HaveField("Message", And(
			ContainSubstring(`cannot patch resource "widgets" in API group "example.com" in the namespace "`+a.Name+`"`),
			ContainSubstring("(Widget/"+a.Name+"/gadget); 1 live change(s) kept without a hold"),
			ContainSubstring(`in a ClusterRole labelled rbac.reflux.dev/aggregate-to-workloads: "true"`))),
	), "reflux's own refused dry run is named, with its fix")
	g.Expect(a.Records(g, "Widget", "gadget")).To(BeEmpty(), "nothing could be evaluated")

	// The grant completed, the Widget's next change is evaluated.
	g.Eventually(func() error {
		cur := &rbacv1.ClusterRole{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(role), cur); err != nil {
			return err
		}
		cur.Rules[0].Verbs = append(cur.Rules[0].Verbs, "patch")
		return env.Client.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
	g.Eventually(func() bool {
		return allowed(g, r.User.Config, access{"patch", "example.com", "widgets", a.Name})
	}, timeout, interval).Should(BeTrue(), "aggregated into reflux-workloads")
	fixture.KubectlEdit(g, env.Client, widget, resize(6))
	a.WaitRecord(g, "Widget", "gadget", fixture.HasField("/spec/size"))
	g.Eventually(func() *metav1.Condition { return drifted(g, a) }, timeout, interval).Should(
		HaveField("Reason", refluxv1.DriftDetectedReason), "the denial ends with the evaluation")
	g.Expect(logLines(g, name, "watch forbidden", "Kind=Widget")).To(HaveLen(1), "the refusal is logged once, not at each retry")
	g.Expect(logLines(g, name, "watch allowed", "Kind=Widget")).To(HaveLen(1))
}

// drifted returns the app's Drifted condition as it stands.
func drifted(g Gomega, a *fixture.App) *metav1.Condition {
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(a.Kustomization()), ks)).To(Succeed())
	return apimeta.FindStatusCondition(ks.Status.Conditions, refluxv1.DriftedCondition)
}

// logLines returns the lines of reflux's log holding every one of words.
func logLines(g Gomega, name string, words ...string) []string {
	var out []string
	for _, line := range readLog(g, name) {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}
