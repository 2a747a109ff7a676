package pullrequest

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestImageRollbackIsADraftNeedingADecision: rolling an image back live
// is a high Alert by default; its pull request is a draft (Gitea: WIP:),
// labelled needs-decision and severity/high, with the policy's reviewers
// requested.
func TestImageRollbackIsADraftNeedingADecision(t *testing.T) {
	g := NewWithT(t)
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "payments-api"}, d)).To(Succeed())
	d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/example/payments-api:1.3.9"
	g.Expect(env.Client.Update(context.Background(), d, client.FieldOwner("kubectl-edit"))).To(Succeed())

	rec := payments.WaitRecord(g, "Deployment", "payments-api", withPullRequest)
	g.Expect(rec.Status.Branch).To(ContainSubstring("needs-decision"))
	prs := pullsOf(g, rec.Status.Branch)
	g.Expect(prs).To(HaveLen(1))
	p := prs[0]
	g.Expect(p.Title).To(HavePrefix("WIP: reflux: payments/payments needs a decision: update Deployment/payments-api"))
	var labels []string
	for _, l := range p.Labels {
		labels = append(labels, l.Name)
	}
	g.Expect(labels).To(ConsistOf("reflux", "needs-decision", "severity/high"))
	g.Expect(p.Body).To(ContainSubstring("`\"ghcr.io/example/payments-api:1.4.2\"` → `\"ghcr.io/example/payments-api:1.3.9\"`"))
	var full struct {
		Reviewers []struct {
			Login string `json:"login"`
		} `json:"requested_reviewers"`
	}
	g.Expect(gt.API(context.Background(), http.MethodGet, fmt.Sprintf("/repos/reflux/%s/pulls/%d", repo, p.Number), nil, &full)).To(Succeed())
	g.Expect(full.Reviewers).To(ContainElement(HaveField("Login", "payments-team")))
}
