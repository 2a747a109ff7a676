package pullrequest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/controllers"
	"github.com/reflux-dev/reflux/internal/refluxtest"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	ns       = "payments"
	repo     = "payments"
	timeout  = 90 * time.Second
	interval = 250 * time.Millisecond
)

var (
	env     *testenv.Env
	gt      *testenv.Gitea
	ks      *kustomizev1.Kustomization
	rfx     *refluxtest.Reflux
	logPath string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	scheme, err := controllers.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if env, err = testenv.Start(ctx, testenv.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }() // the exit code is decided
	if gt, err = testenv.StartGitea(ctx, testenv.GiteaOptions{Dir: filepath.Join(env.Dir, "gitea")}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = gt.Stop() }() // the exit code is decided
	logPath = filepath.Join(env.Dir, "reflux.log")
	code := 1
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the pull-request fixture:", err)
	} else {
		code = m.Run()
	}
	if code != 0 {
		_ = env.DumpLogs(os.Stdout, 256<<10)
		_ = testenv.DumpFiles(os.Stdout, 256<<10, logPath, gt.Process.LogPath)
	}
	return code
}

// setup pushes the payments tree to Gitea, points Flux at it over HTTP,
// creates the policy with its forge token and starts reflux.
func setup(ctx context.Context) error {
	url, _, err := gt.PushDir(ctx, repo, "testdata/payments")
	if err != nil {
		return err
	}
	if err := gt.AddUser(ctx, "payments-team", repo); err != nil {
		return err
	}
	if err := env.CreateNamespace(ctx, ns); err != nil {
		return err
	}
	for name, data := range map[string]map[string][]byte{
		"gitea-auth":  {"username": []byte(gt.Username), "password": []byte(gt.Password)},
		"gitea-token": {refluxv1.PullRequestTokenKey: []byte(gt.Token)},
	} {
		s := &corev1.Secret{Data: data}
		s.Name, s.Namespace = name, ns
		if err := env.Client.Create(ctx, s); err != nil {
			return err
		}
	}
	src := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: url, Interval: metav1.Duration{Duration: 2 * time.Second},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}, SecretRef: &meta.LocalObjectReference{Name: "gitea-auth"}}}
	if err := env.Client.Create(ctx, src); err != nil {
		return err
	}
	ks, err = env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: "payments", Namespace: ns, Source: src.Name, Path: "./base", TargetNamespace: ns, Prune: true,
		// A short interval drives reflux's resync, which checks branches
		// and their pull requests.
		Interval: 3 * time.Second,
		Customize: func(k *kustomizev1.Kustomization) {
			k.Labels = map[string]string{"reflux.dev/tier": "payments"}
			k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
		},
	})
	if err != nil {
		return err
	}
	if err := env.WaitForReady(ctx, ks); err != nil {
		return err
	}
	p := &refluxv1.ReverseSyncPolicy{}
	p.Name, p.Namespace = "payments", ns
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{"reflux.dev/tier": "payments"}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	p.Spec.Git.PullRequest = &refluxv1.PullRequestSpec{Provider: refluxv1.GiteaProvider, APIURL: gt.URL,
		Reviewers: []string{"payments-team"}}
	p.Spec.Git.PullRequest.SecretRef.Name = "gitea-token"
	if err := env.Client.Create(ctx, p); err != nil {
		return err
	}
	rfx, err = refluxtest.Start(refluxtest.Options{Config: env.Config, LogPath: logPath, Debug: true,
		Controllers: controllers.Options{
			Concurrent: 2, PolicyRetry: 2 * time.Second, ArtifactRetry: 2 * time.Second,
			// Gitea speaks plain HTTP on loopback.
			AllowInsecureHTTP: true, GitCacheDir: filepath.Join(env.Dir, "git-cache"),
		}})
	return err
}
