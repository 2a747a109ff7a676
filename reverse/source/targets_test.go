package source

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/governor"
)

func secret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func secretRecord(name string, hotfix bool, fields ...refluxv1.DriftField) refluxv1.Drift {
	d := refluxv1.Drift{}
	d.Spec.Object = refluxv1.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "apps", Name: name}
	d.Spec.ManualHotfix = hotfix
	d.Spec.Fields = fields
	return d
}

func TestTargetsResolve(t *testing.T) {
	repo := gitRepository("flux-system", nil)
	repo.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	repo.Spec.SecretRef = &meta.LocalObjectReference{Name: "git-auth"}
	objs := []client.Object{repo,
		secret("flux-system", "git-auth", map[string]string{"username": "git"}),
		secret("apps", "signing", map[string]string{"git.asc": "key"}),
		secret("apps", "forge", map[string]string{refluxv1.PullRequestTokenKey: " t0ken\n"}),
		secret("apps", "db", map[string]string{"password": "live"}),
		secret("apps", "api", map[string]string{"key": "live"}),
	}
	policy := &refluxv1.ReverseSyncPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "p"}}
	policy.Spec.Git.SigningKey = &refluxv1.SigningKey{SecretRef: meta.LocalObjectReference{Name: "signing"}}
	policy.Spec.Git.PullRequest = &refluxv1.PullRequestSpec{Provider: "gitea", SecretRef: meta.LocalObjectReference{Name: "forge"}}
	value := refluxv1.DriftField{Pointer: "/data/password", ChangeType: refluxv1.ChangeUpdate}
	fromAudit := refluxv1.DriftField{Pointer: refluxv1.WholeObjectPointer, ChangeType: refluxv1.ChangeUpdate}
	set := &reverse.DriftSet{Records: []refluxv1.Drift{
		secretRecord("db", false, value),
		secretRecord("api", true, value),          // a hotfix never reaches Git
		secretRecord("audited", false, fromAudit), // --secrets=metadata: never read
		secretRecord("gone", false, value),        // write-back refuses it with a reason
	}}
	g := NewWithT(t)
	gov := &governor.Governed{Kustomization: kustomizationOf(sourcev1.GitRepositoryKind, "flux-system"), Policy: policy}
	g.Expect(Targets{Reader: fakeReader(t, objs...)}.Resolve(context.Background(), gov, set)).To(Succeed())
	g.Expect(set.Source).To(Equal(&reverse.GitSource{URL: "https://git.example.com/fleet.git", Branch: "main",
		AuthData: map[string][]byte{"username": []byte("git")}}))
	g.Expect(set.SigningKey).To(HaveKeyWithValue("git.asc", []byte("key")))
	g.Expect(set.ForgeToken).To(Equal("t0ken"))
	g.Expect(set.LiveSecrets).To(Equal(map[string]map[string][]byte{"apps/db": {"password": []byte("live")}}))
}

func TestTargetsResolveRefuses(t *testing.T) {
	policy := func(mutate func(*refluxv1.ReverseSyncPolicy)) *refluxv1.ReverseSyncPolicy {
		p := &refluxv1.ReverseSyncPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "p"}}
		mutate(p)
		return p
	}
	tests := []struct {
		name    string
		ks      string
		policy  *refluxv1.ReverseSyncPolicy
		objs    []client.Object
		wantErr string
	}{
		{name: "report-only reads nothing", ks: sourcev1.GitRepositoryKind,
			policy: policy(func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.ReportOnly = true })},
		{name: "an OCI source has no repository to write", ks: sourcev1.OCIRepositoryKind, policy: policy(func(*refluxv1.ReverseSyncPolicy) {})},
		{name: "a missing GitRepository", ks: sourcev1.GitRepositoryKind, policy: policy(func(*refluxv1.ReverseSyncPolicy) {}),
			wantErr: "getting GitRepository apps/fleet"},
		{name: "a token Secret without the token", ks: sourcev1.GitRepositoryKind,
			policy: policy(func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.Git.PullRequest = &refluxv1.PullRequestSpec{SecretRef: meta.LocalObjectReference{Name: "forge"}}
			}),
			objs:    []client.Object{gitRepository("apps", nil), secret("apps", "forge", map[string]string{"other": "x"})},
			wantErr: `Secret apps/forge has no "token" key for spec.git.pullRequest`},
		{name: "a missing signing Secret", ks: sourcev1.GitRepositoryKind,
			policy: policy(func(p *refluxv1.ReverseSyncPolicy) {
				p.Spec.Git.SigningKey = &refluxv1.SigningKey{SecretRef: meta.LocalObjectReference{Name: "signing"}}
			}),
			objs: []client.Object{gitRepository("apps", nil)}, wantErr: "getting Secret apps/signing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			set := &reverse.DriftSet{}
			gov := &governor.Governed{Kustomization: kustomizationOf(tt.ks, ""), Policy: tt.policy}
			err := Targets{Reader: fakeReader(t, tt.objs...)}.Resolve(context.Background(), gov, set)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(set.Source).To(BeNil())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}
