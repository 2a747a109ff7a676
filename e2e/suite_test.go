package e2e

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// The shared smoke fixture: one repository holding e2e/testdata/smoke,
// reconciled by one Kustomization of overlays/prod into smokeNS.
const (
	smokeNS   = "smoke"
	smokeRepo = "smoke.git"
)

var (
	env        *testenv.Env
	smokeSHA   string
	smokeGit   *sourcev1.GitRepository
	smokeKusto *kustomizev1.Kustomization
)

// TestMain starts one environment for every test in the package, because
// kube-apiserver and two controllers take seconds to start, and each test
// works on its own objects.
func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{Setup: setupSmoke})
}

// setupSmoke pushes the fixture over HTTP basic auth and waits until Flux
// has applied it.
func setupSmoke(ctx context.Context, env *testenv.Env) error {
	var err error
	if smokeSHA, err = env.Git.PushDir(ctx, smokeRepo, "testdata/smoke"); err != nil {
		return err
	}
	if err := env.CreateNamespace(ctx, smokeNS); err != nil {
		return err
	}
	smokeGit, err = env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{
		Name: "smoke", Namespace: smokeNS, Repo: smokeRepo, Transport: testenv.TransportHTTP,
	})
	if err != nil {
		return err
	}
	smokeKusto, err = env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: "smoke", Namespace: smokeNS, Source: smokeGit.Name,
		Path: "./overlays/prod", TargetNamespace: smokeNS, Prune: true,
		// Only forced reconciles run during the tests, so a periodic one
		// cannot revert drift before a test has observed it.
		Interval: 10 * time.Minute,
	})
	if err != nil {
		return err
	}
	if err := env.WaitForReady(ctx, smokeGit); err != nil {
		return err
	}
	return env.WaitForReady(ctx, smokeKusto)
}
