package pullrequest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse/policy"
)

const (
	ns       = "payments"
	repo     = "payments"
	timeout  = 90 * time.Second
	interval = 250 * time.Millisecond
)

var (
	env *testenv.Env
	gt  *testenv.Gitea
	ks  *kustomizev1.Kustomization
	// payments is the suite's tenant, governed by rfx.
	payments fixture.Namespace
	rfx      *testenv.RefluxProcess
)

func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{Setup: setup, Env: testenv.Options{Helm: true}})
}

// setup creates the payments tenant and starts the suite's reflux, which
// governs every Kustomization outside the restart shard.
func setup(ctx context.Context, env *testenv.Env) error {
	var err error
	if gt, err = testenv.StartGitea(ctx, testenv.GiteaOptions{Dir: filepath.Join(env.Dir, "gitea")}); err != nil {
		return err
	}
	fixture.Defer(gt.Stop)
	fixture.AddLog(gt.Process.LogPath)
	// reflux signs as Gitea's admin user, whose email Gitea has
	// activated: Gitea verifies a signature only for such a committer.
	key, err := testenv.NewSigningKey(gt.Username, "e2e", gt.Username+"@example.com")
	if err != nil {
		return err
	}
	if err := gt.AddGPGKey(ctx, key.Public); err != nil {
		return err
	}
	if ks, err = createTenant(ctx, tenant{namespace: ns, repo: repo, dir: "testdata/payments", labels: map[string]string{tierLabel: "payments"},
		signingKey: key.Private,
		policy:     func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.PullRequest.Reviewers = []string{"payments-team"} }}); err != nil {
		return err
	}
	if err := gt.AddUser(ctx, "payments-team", repo); err != nil {
		return err
	}
	payments = fixture.Namespace{Env: env, Name: ns}
	if rfx, err = fixture.StartSuiteReflux(ctx, env, fixture.Options{Selector: "!" + shardKey}); err != nil {
		return err
	}
	return payments.WaitClean(ctx, ks.Name)
}

const (
	// tierLabel selects a tenant's Kustomization for its policy.
	tierLabel = "reflux.dev/tier"
	// shardKey labels the Kustomization and policy that the restart
	// test's own reflux binary governs; the suite's reflux leaves them
	// alone, as Flux's sharding does.
	shardKey = "reflux.dev/shard"
)

// tenant is one team's repository in Gitea, its namespace, Flux objects
// and ReverseSyncPolicy.
type tenant struct {
	namespace, repo, dir string
	// labels go on the Kustomization and the policy; the policy selects
	// the Kustomization by the tier label.
	labels map[string]string
	// signingKey, when set, is the armored private key the policy signs
	// commits with.
	signingKey []byte
	// policy adjusts the policy before it is created.
	policy func(*refluxv1.ReverseSyncPolicy)
	// token is the policy's forge token; Gitea's admin token when empty.
	token string
}

// createTenant pushes the tenant's tree to Gitea, points Flux at it over
// HTTP and creates the policy with its forge token. It returns the
// Kustomization once Flux applied it.
func createTenant(ctx context.Context, t tenant) (*kustomizev1.Kustomization, error) {
	url, _, err := gt.PushDir(ctx, t.repo, t.dir)
	if err != nil {
		return nil, err
	}
	if err := env.CreateNamespace(ctx, t.namespace); err != nil {
		return nil, err
	}
	token := t.token
	if token == "" {
		token = gt.Token
	}
	secrets := map[string]map[string][]byte{
		"gitea-auth":  {"username": []byte(gt.Username), "password": []byte(gt.Password)},
		"gitea-token": {refluxv1.PullRequestTokenKey: []byte(token)},
	}
	if t.signingKey != nil {
		secrets["signing-key"] = map[string][]byte{policy.OpenPGPKeyField: t.signingKey}
	}
	for name, data := range secrets {
		s := &corev1.Secret{Data: data}
		s.Name, s.Namespace = name, t.namespace
		if err := env.Client.Create(ctx, s); err != nil {
			return nil, err
		}
	}
	src := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: t.repo, Namespace: t.namespace},
		Spec: sourcev1.GitRepositorySpec{URL: url, Interval: metav1.Duration{Duration: 2 * time.Second},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}, SecretRef: &meta.LocalObjectReference{Name: "gitea-auth"}}}
	if err := env.Client.Create(ctx, src); err != nil {
		return nil, err
	}
	k, err := env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: t.repo, Namespace: t.namespace, Source: src.Name, Path: "./base", TargetNamespace: t.namespace, Prune: true,
		// A short interval drives reflux's resync, which checks branches
		// and their pull requests.
		Interval: 3 * time.Second,
		Customize: func(k *kustomizev1.Kustomization) {
			k.Labels = t.labels
			k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
		},
	})
	if err != nil {
		return nil, err
	}
	if err := env.WaitForReady(ctx, k); err != nil {
		return nil, err
	}
	p := fixture.Policy(t.namespace, t.repo, map[string]string{tierLabel: t.labels[tierLabel]})
	p.Labels = t.labels
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: gt.Username, Email: gt.Username + "@example.com"}
	if t.signingKey != nil {
		p.Spec.Git.SigningKey = &refluxv1.SigningKey{Type: refluxv1.OpenPGPSigningKey, SecretRef: meta.LocalObjectReference{Name: "signing-key"}}
	}
	p.Spec.Git.PullRequest = &refluxv1.PullRequestSpec{Provider: refluxv1.GiteaProvider, APIURL: gt.URL}
	p.Spec.Git.PullRequest.SecretRef.Name = "gitea-token"
	if t.policy != nil {
		t.policy(p)
	}
	if err := env.Client.Create(ctx, p); err != nil {
		return nil, err
	}
	return k, nil
}
