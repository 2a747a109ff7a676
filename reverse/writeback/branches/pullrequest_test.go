package branches

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
)

// refluxSet wraps a drift set so table cases can edit it in place.
type refluxSet struct{ set reverse.DriftSet }

func TestPullRequestFromGroup(t *testing.T) {
	tests := []struct {
		name         string
		mutate       func(s *refluxSet)
		action       refluxv1.Action
		title        string
		labels       []string
		draft        bool
		reviewers    []string
		assignees    []string
		bodyContains []string
		bodyExcludes []string
	}{
		{
			name:   "merge: one field, policy reviewers",
			action: refluxv1.MergeAction,
			title:  "reflux: flux-system/shop: add ConfigMap/checkout-flags /data/EXPRESS_SHIPPING",
			labels: []string{"reflux", "severity/low"}, reviewers: []string{"platform"}, assignees: []string{"oncall"},
			bodyContains: []string{"| v1/ConfigMap shop/checkout-flags | `/data/EXPRESS_SHIPPING` | (none) → `\"true\"` | `base/kustomization.yaml` | alice@example.com (kubectl-edit) | 2026-11-29 02:00:00Z | low | feature-flags |",
				"Merge to keep the live values"},
		},
		{
			name:   "alert: draft, needs-decision, severity",
			action: refluxv1.AlertAction,
			title:  "reflux: flux-system/shop needs a decision: update Deployment/checkout /spec/replicas",
			labels: []string{"reflux", "needs-decision", "severity/low"}, draft: true,
			reviewers: []string{"platform"}, assignees: []string{"oncall"},
			bodyContains: []string{"`4` → `6`", "`overlays/prod/kustomization.yaml:6`", "reflux never merges this pull request"},
		},
		{
			name:   "a field no rule named shows a dash",
			mutate: func(s *refluxSet) { s.set.Records[0].Spec.Fields[0].Rule = "" },
			action: refluxv1.MergeAction,
			title:  "reflux: flux-system/shop: add ConfigMap/checkout-flags /data/EXPRESS_SHIPPING",
			labels: []string{"reflux", "severity/low"}, reviewers: []string{"platform"}, assignees: []string{"oncall"},
			bodyContains: []string{"| low | — |"},
		},
		{
			name: "a rule's override replaces the policy's reviewers",
			mutate: func(s *refluxSet) {
				s.set.Policy.Spec.Rules = []refluxv1.Rule{
					{Kinds: []string{"Deployment"}, Action: refluxv1.AlertAction},
					{Name: "payments", Kinds: []string{"ConfigMap"}, Action: refluxv1.MergeAction,
						PullRequest: &refluxv1.PullRequestOverride{Reviewers: []string{"payments-team"}}},
				}
				s.set.Records[0].Spec.Fields[0].Rule = "payments"
			},
			action: refluxv1.MergeAction,
			title:  "reflux: flux-system/shop: add ConfigMap/checkout-flags /data/EXPRESS_SHIPPING",
			labels: []string{"reflux", "severity/low"}, reviewers: []string{"payments-team"},
			bodyContains: []string{"| low | payments |"},
		},
		{
			name: "an unnamed rule matches by its index",
			mutate: func(s *refluxSet) {
				s.set.Policy.Spec.Rules = []refluxv1.Rule{{Kinds: []string{"Deployment"}, Action: refluxv1.AlertAction,
					PullRequest: &refluxv1.PullRequestOverride{Assignees: []string{"sre"}}}}
				s.set.Records[1].Spec.Fields[0].Rule = "rules[0]"
				s.set.Records[1].Spec.Fields[0].Severity = refluxv1.SeverityCritical
			},
			action: refluxv1.AlertAction,
			title:  "reflux: flux-system/shop needs a decision: update Deployment/checkout /spec/replicas",
			labels: []string{"reflux", "needs-decision", "severity/critical"}, draft: true, assignees: []string{"sre"},
		},
		{
			name: "a chart's field names its values key and template",
			mutate: func(s *refluxSet) {
				s.set.Records = helmSet("https://git.example/shop.git", "6").Records
			},
			action: refluxv1.MergeAction,
			title:  "reflux: flux-system/shop: update Deployment/shop-webapp /spec/replicas",
			labels: []string{"reflux", "severity/low"}, reviewers: []string{"platform"}, assignees: []string{"oncall"},
			bodyContains: []string{"| apps/v1/Deployment shop/shop-webapp | `/spec/replicas` | `4` → `6` | " +
				"`overlays/prod/values.yaml:7`, values key `replicaCount` (chart template `templates/deployment.yaml:9`) |"},
		},
		{
			name: "Secret values stay masked as the record holds them",
			mutate: func(s *refluxSet) {
				f := &s.set.Records[0].Spec.Fields[0]
				s.set.Records[0].Spec.Object.Kind = "Secret"
				f.Pointer, f.LiveValue = "/data/password", `"***"`
			},
			action:    refluxv1.MergeAction,
			title:     "reflux: flux-system/shop: add Secret/checkout-flags /data/password",
			labels:    []string{"reflux", "severity/low"},
			reviewers: []string{"platform"}, assignees: []string{"oncall"},
			bodyContains: []string{"(none) → `\"***\"`"},
			bodyExcludes: []string{"true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := refluxSet{set: shopSet("https://git.example/shop.git")}
			s.set.Policy.Spec.Git.PullRequest = &refluxv1.PullRequestSpec{Provider: refluxv1.GiteaProvider,
				Reviewers: []string{"platform"}, Assignees: []string{"oncall"}}
			if tt.mutate != nil {
				tt.mutate(&s)
			}
			var grp group
			for _, gr := range split(s.set.Records, true, writes{encrypt: true}) {
				if gr.action == tt.action {
					grp = gr
				}
			}
			g.Expect(grp.fields).NotTo(BeEmpty())
			req := pullRequest(s.set, grp, "reflux/x", "c0ffee")
			g.Expect(req.Commit).To(Equal("c0ffee"))
			g.Expect(req.Title).To(Equal(tt.title))
			g.Expect(req.Labels).To(Equal(tt.labels))
			g.Expect(req.Draft).To(Equal(tt.draft))
			g.Expect(req.Reviewers).To(Equal(tt.reviewers))
			g.Expect(req.Assignees).To(Equal(tt.assignees))
			g.Expect(req.Head).To(Equal("reflux/x"))
			g.Expect(req.Base).To(Equal("main"))
			for _, want := range tt.bodyContains {
				g.Expect(req.Body).To(ContainSubstring(want))
			}
			for _, not := range tt.bodyExcludes {
				g.Expect(strings.Contains(req.Body, not)).To(BeFalse(), "body leaks %q:\n%s", not, req.Body)
			}
		})
	}
}

func TestPullRequestTitleManyFields(t *testing.T) {
	g := NewWithT(t)
	set := shopSet("https://git.example/shop.git")
	set.Policy.Spec.Git.PullRequest = &refluxv1.PullRequestSpec{}
	for i := range set.Records {
		set.Records[i].Spec.Fields[0].Action = refluxv1.MergeAction
	}
	grp := split(set.Records, true, writes{encrypt: true})[0]
	g.Expect(prTitle(set.Kustomization, grp)).To(Equal("reflux: flux-system/shop: 2 fields of ConfigMap/checkout-flags, Deployment/checkout"))
}
