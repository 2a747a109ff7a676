package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// validPolicy is the smallest policy the apiserver accepts.
func validPolicy(ns, name string) *refluxv1.ReverseSyncPolicy {
	return &refluxv1.ReverseSyncPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: refluxv1.ReverseSyncPolicySpec{
			Git: refluxv1.GitSpec{
				Author: refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"},
			},
			Rules: []refluxv1.Rule{{
				Kinds:  []string{"ConfigMap"},
				Fields: []string{"/data/*"},
				Action: refluxv1.MergeAction,
			}},
		},
	}
}

// TestAdmissionRejectsInvalidPolicies proves that the real apiserver, with
// the generated CRD, rejects each invalid policy the API promises to reject,
// and that the message names the offending field.
func TestAdmissionRejectsInvalidPolicies(t *testing.T) {
	ns := newNamespace(t)
	tests := []struct {
		name   string
		mutate func(p *refluxv1.ReverseSyncPolicy)
		raw    func(u map[string]interface{})
		field  string
		text   string
	}{
		{
			name:   "unknown action",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Rules[0].Action = "Revert" },
			field:  "spec.rules[0].action",
			text:   `Unsupported value: "Revert"`,
		},
		{
			name:   "malformed pointer pattern without leading slash",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Rules[0].Fields = []string{"data/*"} },
			field:  "spec.rules[0].fields[0]",
			text:   "should match",
		},
		{
			name:   "malformed pointer pattern with partial wildcard",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Rules[0].Fields = []string{"/data/feature-*"} },
			field:  "spec.rules[0].fields[0]",
			text:   "should match",
		},
		{
			name:   "malformed pointer pattern with bad escape",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Rules[0].Fields = []string{"/metadata/annotations/a~2b"} },
			field:  "spec.rules[0].fields[0]",
			text:   "should match",
		},
		{
			name: "rule that matches nothing: no criteria",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.Rules = append(p.Spec.Rules, refluxv1.Rule{Action: refluxv1.IgnoreAction})
			},
			field: "spec.rules[1]",
			text:  "a rule must match on at least one of paths, kinds, fields or changeTypes",
		},
		{
			name:   "unknown hold mode",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Hold = "Sometimes" },
			field:  "spec.hold",
			text:   `Unsupported value: "Sometimes"`,
		},
		{
			name:   "unknown change type",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Rules[0].ChangeTypes = []refluxv1.ChangeType{"Rename"} },
			field:  "spec.rules[0].changeTypes[0]",
			text:   `Unsupported value: "Rename"`,
		},
		{
			// An empty string is dropped by omitempty in Go, so send it raw
			// the way kubectl would from a YAML file.
			name:   "empty branch prefix",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {},
			raw: func(u map[string]interface{}) {
				_ = unstructured.SetNestedField(u, "", "spec", "git", "branchPrefix")
			},
			field: "spec.git.branchPrefix",
			text:  "at least 1 chars long",
		},
		{
			name:   "branch prefix naming the source branch",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.BranchPrefix = "main/" },
			field:  "spec.git.branchPrefix",
			text:   "must not start with a source branch name",
		},
		{
			name:   "branch prefix that is itself a branch name",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.BranchPrefix = "main" },
			field:  "spec.git.branchPrefix",
			text:   "should match",
		},
		{
			name:   "branch prefix with dot-dot",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.BranchPrefix = "reflux/a..b/" },
			field:  "spec.git.branchPrefix",
			text:   "must not contain '..'",
		},
		{
			name: "pgp recipient that is not an armored public key",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.Git.Encryption = &refluxv1.Encryption{PGP: []string{"ABCDEF0123456789"}}
			},
			field: "spec.git.encryption.pgp[0]",
			text:  "should match",
		},
		{
			name:   "encryption without recipients",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.Encryption = &refluxv1.Encryption{} },
			field:  "spec.git.encryption",
			text:   "encryption needs at least one age or pgp recipient",
		},
		{
			name:   "unknown severity",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Rules[0].Severity = "urgent" },
			field:  "spec.rules[0].severity",
			text:   `Unsupported value: "urgent"`,
		},
		{
			name: "unknown signing key type",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.Git.SigningKey = &refluxv1.SigningKey{Type: "x509"}
				p.Spec.Git.SigningKey.SecretRef.Name = "key"
			},
			field: "spec.git.signingKey.type",
			text:  `Unsupported value: "x509"`,
		},
		{
			name:   "unknown pull-request provider",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.PullRequest = prSpec("codecommit", "") },
			field:  "spec.git.pullRequest.provider",
			text:   `Unsupported value: "codecommit"`,
		},
		{
			name:   "gitea without an API URL",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.PullRequest = prSpec(refluxv1.GiteaProvider, "") },
			field:  "spec.git.pullRequest",
			text:   "pullRequest.apiURL is required for provider gitea",
		},
		{
			name: "bitbucketserver without an API URL",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.Git.PullRequest = prSpec(refluxv1.BitbucketServerProvider, "")
			},
			field: "spec.git.pullRequest",
			text:  "pullRequest.apiURL is required for provider bitbucketserver",
		},
		{
			name: "API URL that is not http(s)",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.Git.PullRequest = prSpec(refluxv1.GitHubProvider, "ssh://github.example.com")
			},
			field: "spec.git.pullRequest.apiURL",
			text:  "should match",
		},
		{
			name: "pull-request token without a Secret name",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.Git.PullRequest = prSpec(refluxv1.GitHubProvider, "")
				p.Spec.Git.PullRequest.SecretRef.Name = ""
			},
			raw: func(u map[string]interface{}) {
				_ = unstructured.SetNestedField(u, map[string]interface{}{}, "spec", "git", "pullRequest", "secretRef")
			},
			field: "spec.git.pullRequest.secretRef.name",
			text:  "Required value",
		},
		{
			name: "empty reviewer in a rule's override",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.Rules[0].PullRequest = &refluxv1.PullRequestOverride{Reviewers: []string{""}}
			},
			field: "spec.rules[0].pullRequest.reviewers[0]",
			text:  "at least 1 chars long",
		},
		{
			name:   "unknown onExpiry",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.ManualHotfix.OnExpiry = "Revert" },
			field:  "spec.manualHotfix.onExpiry",
			text:   `Unsupported value: "Revert"`,
		},
		{
			name:   "maxAge that is not a duration",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {},
			raw: func(u map[string]interface{}) {
				_ = unstructured.SetNestedField(u, "three days", "spec", "manualHotfix", "maxAge")
			},
			field: "spec.manualHotfix.maxAge",
			text:  "should match",
		},
		{
			name: "maxAge under a second",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.ManualHotfix.MaxAge = &metav1.Duration{Duration: 500 * time.Millisecond}
			},
			field: "spec.manualHotfix.maxAge",
			text:  "manualHotfix.maxAge must be at least 1s",
		},
		{
			name:   "holdFor that is not a duration",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {},
			raw: func(u map[string]interface{}) {
				rules, _, _ := unstructured.NestedSlice(u, "spec", "rules")
				rules[0].(map[string]interface{})["holdFor"] = "-5m"
				_ = unstructured.SetNestedSlice(u, rules, "spec", "rules")
			},
			field: "spec.rules[0].holdFor",
			text:  "should match",
		},
		{
			name:   "empty break-glass group",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.ManualHotfix.FromGroups = []string{""} },
			field:  "spec.manualHotfix.fromGroups[0]",
			text:   "at least 1 chars long",
		},
		{
			name:   "duplicate break-glass user",
			mutate: func(p *refluxv1.ReverseSyncPolicy) { p.Spec.ManualHotfix.FromUsers = []string{"alice", "alice"} },
			field:  "spec.manualHotfix.fromUsers[1]",
			text:   "Duplicate value",
		},
		{
			name: "holdFor of zero",
			mutate: func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.Rules[0].HoldFor = &metav1.Duration{}
			},
			field: "spec.rules[0].holdFor",
			text:  "holdFor must be at least 1s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p := validPolicy(ns, "invalid")
			tt.mutate(p)
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
			g.Expect(err).ToNot(HaveOccurred())
			if tt.raw != nil {
				tt.raw(u)
			}
			obj := &unstructured.Unstructured{Object: u}
			obj.SetGroupVersionKind(refluxv1.GroupVersion.WithKind(refluxv1.ReverseSyncPolicyKind))
			err = k8sClient.Create(context.Background(), obj)
			g.Expect(err).To(HaveOccurred(), "the apiserver accepted an invalid policy")
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.field))
			g.Expect(err.Error()).To(ContainSubstring(tt.text))
		})
	}
}

// prSpec is a pull-request spec with a token Secret.
func prSpec(provider refluxv1.Provider, apiURL string) *refluxv1.PullRequestSpec {
	pr := &refluxv1.PullRequestSpec{Provider: provider, APIURL: apiURL}
	pr.SecretRef.Name = "forge-token"
	return pr
}

// TestAdmissionDefaults proves the schema defaults a user relies on.
func TestAdmissionDefaults(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	p := validPolicy(ns, "defaults")
	g.Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
	g.Expect(p.Spec.Git.BranchPrefix).To(Equal(refluxv1.DefaultBranchPrefix))
	g.Expect(p.Spec.ManualHotfix.Key).To(Equal(refluxv1.DefaultManualHotfixKey))
	g.Expect(p.Spec.ManualHotfix.Value).To(Equal(refluxv1.DefaultManualHotfixValue))
	g.Expect(p.Spec.Git.AlertBranches).To(Equal("Separate"))
	g.Expect(p.Spec.Hold).To(Equal(refluxv1.HoldRules))
	g.Expect(p.Spec.ManualHotfix.OnExpiry).To(Equal(refluxv1.ExpiryAlert))
	g.Expect(p.Spec.ManualHotfix.MaxAge).To(BeNil(), "no limit unless asked for")
}

// TestAdmissionAcceptsHoldLimits proves that well-formed hold limits pass
// admission and read back as written.
func TestAdmissionAcceptsHoldLimits(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	p := validPolicy(ns, "limits")
	p.Spec.ManualHotfix.MaxAge = &metav1.Duration{Duration: 72 * time.Hour}
	p.Spec.ManualHotfix.OnExpiry = refluxv1.ExpiryRelease
	p.Spec.Rules[0].HoldFor = &metav1.Duration{Duration: 90 * time.Minute}
	g.Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
	got := &refluxv1.ReverseSyncPolicy{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(p), got)).To(Succeed())
	g.Expect(got.Spec.ManualHotfix.MaxAge.Duration).To(Equal(72 * time.Hour))
	g.Expect(got.Spec.ManualHotfix.OnExpiry).To(Equal(refluxv1.ExpiryRelease))
	g.Expect(got.Spec.Rules[0].HoldFor.Duration).To(Equal(90 * time.Minute))
}

// TestAdmissionAcceptsBitbucketServer: the provider with its base URL.
func TestAdmissionAcceptsBitbucketServer(t *testing.T) {
	g := NewWithT(t)
	p := validPolicy(newNamespace(t), "bitbucket")
	p.Spec.Git.PullRequest = prSpec(refluxv1.BitbucketServerProvider, "https://bitbucket.example.com")
	g.Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
	g.Expect(p.Spec.Git.PullRequest.Provider).To(Equal(refluxv1.BitbucketServerProvider))
}

// TestAdmissionAcceptsBitbucketCloud: bitbucket.org needs no API URL.
func TestAdmissionAcceptsBitbucketCloud(t *testing.T) {
	g := NewWithT(t)
	p := validPolicy(newNamespace(t), "bitbucket-cloud")
	p.Spec.Git.PullRequest = prSpec(refluxv1.BitbucketCloudProvider, "")
	g.Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
	g.Expect(p.Spec.Git.PullRequest.Provider).To(Equal(refluxv1.BitbucketCloudProvider))
}

// TestAdmissionAcceptsAzureDevOps: dev.azure.com needs no API URL; a
// server's collection URL is taken as one.
func TestAdmissionAcceptsAzureDevOps(t *testing.T) {
	g := NewWithT(t)
	p := validPolicy(newNamespace(t), "azure-devops")
	p.Spec.Git.PullRequest = prSpec(refluxv1.AzureDevOpsProvider, "")
	g.Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
	g.Expect(p.Spec.Git.PullRequest.Provider).To(Equal(refluxv1.AzureDevOpsProvider))

	p = validPolicy(p.Namespace, "azure-devops-server")
	p.Spec.Git.PullRequest = prSpec(refluxv1.AzureDevOpsProvider, "https://ado.example.com/tfs/DefaultCollection")
	g.Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
}
