package soak

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// perFile is how many ConfigMaps one file of a tenant's tree declares.
const perFile = 50

// tenant is one team: a namespace, its repository on Gitea reached
// through the soak's git proxy, its GitRepository, one Kustomization
// opted in to reverse sync and the policy governing it, whose pull
// requests go through the forge proxy.
type tenant struct {
	Name    string
	Objects int
	// GitSecret is the value of the tree's Secret, which must never
	// appear anywhere reflux writes.
	GitSecret string
	Source    *sourcev1.GitRepository
	KS        *kustomizev1.Kustomization
}

// objectName is the i-th ConfigMap of a tenant.
func objectName(i int) string { return fmt.Sprintf("cm-%04d", i) }

// tree is a tenant's repository: n ConfigMaps in files of perFile, and a
// Secret holding secret.
func tree(n int, secret string) map[string]string {
	files := map[string]string{}
	var resources []string
	for f := 0; f*perFile < n; f++ {
		var b strings.Builder
		for i := f * perFile; i < min(n, (f+1)*perFile); i++ {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  LEVEL: git\n  MODE: steady\n", objectName(i))
		}
		name := fmt.Sprintf("objects-%03d.yaml", f)
		files[name] = b.String()
		resources = append(resources, name)
	}
	files["creds.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ntype: Opaque\nstringData:\n  TOKEN: " + secret + "\n"
	resources = append(resources, "creds.yaml")
	files["kustomization.yaml"] = fixture.Kustomization(resources...)
	return files
}

// secretValue is a fresh value no one could write by chance.
func secretValue(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return prefix + hex.EncodeToString(b)
}

// world is what the soak's tenants share: Gitea and the proxies in front
// of it.
type world struct {
	gt *testenv.Gitea
	// git carries every clone, fetch and push, Flux's and reflux's; forge
	// every call of reflux to Gitea's API.
	git, forge *testenv.FaultProxy
}

// newTenant pushes the tenant's tree to Gitea and creates its Flux
// objects and policy, reconciled every interval, or only when the soak's
// pacer says (interval 0).
func (w *world) newTenant(ctx context.Context, name string, objects int, interval time.Duration) (*tenant, error) {
	if interval == 0 {
		interval = time.Hour
	}
	t := &tenant{Name: name, Objects: objects, GitSecret: secretValue("soak-git-secret-")}
	dir, err := os.MkdirTemp("", "soak-tree-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) //nolint:errcheck // scratch space
	if err := fixture.WriteTree(dir, tree(objects, t.GitSecret)); err != nil {
		return nil, err
	}
	if _, _, err := w.gt.PushDir(ctx, name, dir); err != nil {
		return nil, err
	}
	if err := env.CreateNamespace(ctx, name); err != nil {
		return nil, err
	}
	if err := w.secrets(ctx, name); err != nil {
		return nil, err
	}
	url := w.git.URL() + "/" + w.gt.Username + "/" + name + ".git"
	src := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name},
		Spec: sourcev1.GitRepositorySpec{URL: url, Interval: metav1.Duration{Duration: interval},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}, SecretRef: &meta.LocalObjectReference{Name: "gitea-auth"}}}
	if err := env.Client.Create(ctx, src); err != nil {
		return nil, err
	}
	t.Source = src
	labels := map[string]string{fixture.AppLabel: name}
	if t.KS, err = env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: name, Namespace: name, Source: name, Path: "./", TargetNamespace: name, Prune: true, Interval: interval,
		Customize: func(k *kustomizev1.Kustomization) {
			k.Labels = labels
			k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
		},
	}); err != nil {
		return nil, err
	}
	p := fixture.Policy(name, name, labels)
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: w.gt.Username, Email: w.gt.Username + "@example.com"}
	p.Spec.Git.PullRequest = &refluxv1.PullRequestSpec{Provider: refluxv1.GiteaProvider, APIURL: w.forge.URL()}
	p.Spec.Git.PullRequest.SecretRef.Name = "gitea-token"
	return t, env.Client.Create(ctx, p)
}

// secrets creates the tenant's git credentials and forge token.
func (w *world) secrets(ctx context.Context, ns string) error {
	for name, data := range map[string]map[string][]byte{
		"gitea-auth":  {"username": []byte(w.gt.Username), "password": []byte(w.gt.Password)},
		"gitea-token": {refluxv1.PullRequestTokenKey: []byte(w.gt.Token)},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
		if err := env.Client.Create(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// startWorld starts Gitea in the environment's directory and the proxies
// in front of it.
func startWorld(ctx context.Context) (*world, error) {
	gt, err := testenv.StartGitea(ctx, testenv.GiteaOptions{Dir: filepath.Join(env.Dir, "gitea")})
	if err != nil {
		return nil, err
	}
	fixture.AddLog(gt.Process.LogPath)
	w := &world{gt: gt}
	if w.git, err = testenv.NewFaultProxy(gt.URL); err != nil {
		return nil, err
	}
	if w.forge, err = testenv.NewFaultProxy(gt.URL); err != nil {
		return nil, err
	}
	return w, nil
}

// stop ends the proxies and Gitea.
func (w *world) stop() error {
	_ = w.git.Close()   // nothing is relayed any more
	_ = w.forge.Close() // likewise
	return w.gt.Stop()
}
