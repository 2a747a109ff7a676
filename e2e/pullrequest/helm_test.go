package pullrequest

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestAHelmValuesChangeIsAPullRequest (issue 19 §6): a scale of a chart's
// Deployment, which the policy merges, becomes a pull request in Gitea
// that changes the replicaCount line of the HelmRelease's spec.values and
// names the values key and the chart template. The HelmRelease says so in
// its ReverseSynced condition. A reviewer's squash merge deletes the
// branch; Flux applies the HelmRelease, helm-controller upgrades the
// release, and the record is Resolved with the live value kept.
func TestAHelmValuesChangeIsAPullRequest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "helm-shop"
	dir := fixture.Tree(t, fixture.ChartTree, map[string]string{
		"base/kustomization.yaml": fixture.Kustomization("release.yaml"),
		"base/release.yaml":       fixture.HelmReleaseFile(name, "", "  values:\n    replicaCount: 2 # two shops\n"),
	})
	k, err := createTenant(ctx, tenant{namespace: name, repo: name, dir: dir, labels: map[string]string{tierLabel: name},
		policy: func(p *refluxv1.ReverseSyncPolicy) {
			p.Spec.Rules = []refluxv1.Rule{{Name: "scale", Kinds: []string{"Deployment"}, Fields: []string{"/spec/replicas"},
				Action: refluxv1.MergeAction}}
		}})
	g.Expect(err).NotTo(HaveOccurred())
	hr := &helmv2.HelmRelease{}
	version := func(g Gomega) int {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "app"}, hr)).To(Succeed())
		g.Expect(hr.Status.History.Latest()).NotTo(BeNil())
		return hr.Status.History.Latest().Version
	}
	g.Eventually(version, timeout, interval).Should(Equal(1), "helm-controller installed the chart")
	g.Expect((fixture.Namespace{Env: env, Name: name}).WaitClean(ctx, k.Name)).To(Succeed())

	editDeployment(g, name, "app", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(4)) })
	rec := recordIn(g, name, "app", withPullRequest)
	g.Expect(rec.Spec.HelmRelease).NotTo(BeNil())
	prs := pullsIn(g, name, rec.Status.Branch)
	g.Expect(prs).To(HaveLen(1))
	g.Expect(prs[0].URL).To(Equal(rec.Status.PullRequest))
	g.Expect(prs[0].Body).To(ContainSubstring("| `/spec/replicas` | `2` → `4` | `base/release.yaml:21`, values key `replicaCount` " +
		"(chart template `templates/deployment.yaml:8`) |"))
	g.Expect(prLabels(prs[0])).To(ContainElement("reflux"))
	g.Expect(fileAt(g, name, rec.Status.Branch, "base/release.yaml")).To(ContainSubstring("    replicaCount: 4 # two shops\n"),
		"the values line, comment kept")
	g.Eventually(func(g Gomega) {
		c := conditions.Get(helmReleaseOf(g, name), refluxv1.ReverseSyncedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect([]string{string(c.Status), c.Reason, c.Message}).To(Equal([]string{"True", refluxv1.BranchPushedReason,
			fmt.Sprintf("BranchPushed: branch %s carries the change at %s, pull request %s", rec.Status.Branch, rec.Status.Commit[:12], prs[0].URL)}))
		t.Logf("ReverseSynced=%s %s %s", c.Status, c.Reason, c.Message) // the README shows it
	}, timeout, interval).Should(Succeed())

	g.Expect(gt.Merge(ctx, "reflux", name, prs[0].Number, "squash", true)).To(Succeed())
	g.Eventually(version, timeout, interval).Should(Equal(2), "helm-controller upgraded with the merged values")
	resolved := recordIn(g, name, "app", isState(refluxv1.DriftResolved))
	g.Expect(resolved.Name).To(Equal(rec.Name))
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "app"}, d)).To(Succeed())
		g.Expect(*d.Spec.Replicas).To(Equal(int32(4)), "the live value is now the chart's")
		g.Expect(d.Annotations).NotTo(HaveKey(refluxv1.HeldByAnnotation), "released once resolved")
		g.Expect(conditions.Get(helmReleaseOf(g, name), refluxv1.ReverseSyncedCondition)).To(BeNil(), "nothing is left to write back")
	}, timeout, interval).Should(Succeed())
	var merged pr
	g.Expect(gt.API(ctx, http.MethodGet, fmt.Sprintf("/repos/reflux/%s/pulls/%d", name, prs[0].Number), nil, &merged)).To(Succeed())
	g.Expect(merged.State).To(Equal("closed"))
}

func helmReleaseOf(g Gomega, ns string) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, hr)).To(Succeed())
	return hr
}
