package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// Reconcile intervals of the demo's Flux objects. A minute is long enough
// to look at a `kubectl edit` before Flux acts and short enough to watch
// it revert one without forcing a reconcile.
const (
	sourceInterval        = 30 * time.Second
	kustomizationInterval = time.Minute
)

// testBinaries are what `make testbin` puts in bin/, checked up front so a
// missing one fails in a second instead of after the apiserver started.
var testBinaries = []string{"etcd", "kube-apiserver", "source-controller", "kustomize-controller", "helm-controller", "gitea"}

// checkBinaries fails with the make target that provides a missing binary.
func (d *demo) checkBinaries(context.Context) error {
	if err := executable(d.opts.refluxBin); err != nil {
		return fmt.Errorf("%w: run `make build`", err)
	}
	for _, name := range testBinaries {
		if err := executable(filepath.Join(d.opts.repoRoot, "bin", name)); err != nil {
			return fmt.Errorf("%w: run `make testbin`", err)
		}
	}
	return nil
}

func executable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s is missing", path)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// startEnvironment starts the real control plane and Flux, and Gitea
// beside them: the forge reflux opens its pull requests on.
func (d *demo) startEnvironment(ctx context.Context) error {
	scheme := runtime.NewScheme()
	if err := refluxv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building scheme: %w", err)
	}
	env, err := testenv.Start(ctx, testenv.Options{
		RepoRoot:    d.opts.repoRoot,
		Scheme:      scheme,
		WaitTimeout: readinessTimeout,
		// The apiserver sends audit events to reflux's --audit-addr, so
		// reflux can name who made a change, as it would in a cluster
		// with an audit webhook configured.
		AuditWebhook: &testenv.AuditWebhook{},
		// helm-controller renders the app's cache from its HelmRelease.
		Helm: true,
	})
	if err != nil {
		return err
	}
	d.env = env
	gt, err := testenv.StartGitea(ctx, testenv.GiteaOptions{BinDir: filepath.Join(d.opts.repoRoot, "bin"),
		Dir: filepath.Join(env.Dir, "gitea"), StartTimeout: readinessTimeout})
	if err != nil {
		return err
	}
	d.gitea = gt
	return nil
}

// giteaLogs is Gitea's log, which says why a push or an API call failed.
func (d *demo) giteaLogs() []string {
	if d.gitea == nil {
		return nil
	}
	return []string{d.gitea.Process.LogPath}
}

// startLogs are the control plane's and controllers' logs. When Start
// failed there is no Env, but testenv kept its directory under the demo's
// work directory, where the logs can still be found.
func (d *demo) startLogs() []string {
	if d.env != nil {
		return d.env.LogPaths()
	}
	if d.opts.workDir == "" {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(d.opts.workDir, "reflux-testenv-*", "*.log")) // pattern is valid
	return paths
}

// pushApp pushes the embedded app as the whole of branch main.
func (d *demo) pushApp(ctx context.Context) error {
	dir := appDir(d.env.Dir)
	if err := writeApp(dir); err != nil {
		return err
	}
	_, rev, err := d.gitea.PushDir(ctx, repoName, dir)
	if err != nil {
		return err
	}
	d.revision = rev
	return nil
}

// applyApp has Flux apply the app the way a platform team would set it up,
// with the Kustomization opted in to reverse sync, and waits until Flux
// reports both objects Ready. The GitRepository reads Gitea over HTTP with
// a basic-auth Secret; reflux pushes its branches with the same Secret,
// and it refuses to send credentials over plain http:// outside tests
// (--insecure-allow-http).
func (d *demo) applyApp(ctx context.Context) error {
	for _, ns := range []string{fluxNamespace, appNamespace} {
		if err := d.env.CreateNamespace(ctx, ns); err != nil {
			return err
		}
	}
	auth := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: appName + "-auth", Namespace: fluxNamespace},
		Data: map[string][]byte{"username": []byte(d.gitea.Username), "password": []byte(d.gitea.Password)}}
	if err := d.env.Client.Create(ctx, auth); err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", auth.Namespace, auth.Name, err)
	}
	source := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: fluxNamespace},
		Spec: sourcev1.GitRepositorySpec{URL: d.gitea.URL + "/" + d.gitea.Username + "/" + repoPath,
			Interval:  metav1.Duration{Duration: sourceInterval},
			Reference: &sourcev1.GitRepositoryRef{Branch: testenv.DefaultBranch},
			SecretRef: &meta.LocalObjectReference{Name: auth.Name}}}
	if err := d.env.Client.Create(ctx, source); err != nil {
		return fmt.Errorf("creating GitRepository %s/%s: %w", source.Namespace, source.Name, err)
	}
	d.source = source
	ks, err := d.env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: appName, Namespace: fluxNamespace, Source: source.Name,
		Path: appPath, TargetNamespace: appNamespace, Prune: true,
		Interval: kustomizationInterval, Customize: optIn,
	})
	if err != nil {
		return err
	}
	d.kustomization = ks
	if err := d.env.WaitForReady(ctx, d.source); err != nil {
		return err
	}
	return d.env.WaitForReady(ctx, d.kustomization)
}

// optIn labels the Kustomization for the policy's selector and annotates
// it for reverse sync: reflux governs it only with both.
func optIn(ks *kustomizev1.Kustomization) {
	ks.Labels = map[string]string{tierLabel: tierValue}
	ks.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
}

// fluxLogs are the Flux controllers' logs, which say why a source or
// Kustomization is not Ready.
func (d *demo) fluxLogs() []string {
	if d.env == nil {
		return nil
	}
	var paths []string
	for _, p := range d.env.Processes() {
		paths = append(paths, p.LogPath)
	}
	return paths
}
