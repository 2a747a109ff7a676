package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// Names of what the demo creates. flux-system, the tier label and the
// policy name match config/samples and the README, so the commands a
// newcomer copies from either work here.
const (
	fluxNamespace = "flux-system"
	appNamespace  = "podinfo"
	appName       = "podinfo"
	repoName      = "podinfo"
	repoPath      = repoName + ".git"
	appPath       = "./overlays/prod"
	policyName    = "apps"
	tierLabel     = "reflux.dev/tier"
	tierValue     = "apps"
	signingSecret = "reflux-signing-key"
	tokenSecret   = "gitea-token"
	refluxUser    = testenv.RefluxUser
	// The identity reflux commits as; the signing key carries the same one
	// so `git verify-commit` shows a matching signer. It is Gitea's admin
	// user's too, which Gitea needs to show the commits as verified.
	authorName  = "reflux"
	authorEmail = "reflux@example.com"
)

// Bounds on waiting. A minute covers a loaded laptop; a healthy setup
// takes seconds.
const (
	readinessTimeout = 60 * time.Second
	refluxStopGrace  = 10 * time.Second
)

// options configure a demo run.
type options struct {
	// repoRoot holds bin/ (the test binaries) and config/crd. Defaults to
	// the first directory above the working directory with a go.mod.
	repoRoot string
	// refluxBin is run as `reflux manager`. Defaults to repoRoot/bin/reflux,
	// which `make build` writes.
	refluxBin string
	// workDir is the demo's own temporary directory, which testenv's
	// directory lives in (see main). Failed starts leave their logs there.
	// Optional.
	workDir string
	// gitLogPath is where the git server's request log goes, when main
	// redirected it. Optional.
	gitLogPath string
	// exit is where the demo ends instead of waiting for a signal.
	exit exitPoint
	// out receives progress and the summary.
	out io.Writer
}

// exitPoint is where the demo ends instead of waiting for Ctrl-C.
type exitPoint int

const (
	// exitNever runs setup and scenario, then waits for Ctrl-C: the
	// newcomer's demo, with everything left running to explore.
	exitNever exitPoint = iota
	// exitAfterSetup ends after the summary: a check of the setup alone.
	exitAfterSetup
	// exitAfterScenario ends after the scenario: a smoke check of the
	// whole journey, from the edit to the signed branch.
	exitAfterScenario
)

// earliest returns whichever of a and b ends the demo first; exitNever
// ends it last.
func earliest(a, b exitPoint) exitPoint {
	if a == exitNever || (b != exitNever && b < a) {
		return b
	}
	return a
}

// complete fills the defaults.
func (o *options) complete() error {
	if o.out == nil {
		o.out = os.Stdout
	}
	if o.repoRoot == "" {
		root, err := findRepoRoot(".")
		if err != nil {
			return err
		}
		o.repoRoot = root
	}
	if o.refluxBin == "" {
		o.refluxBin = filepath.Join(o.repoRoot, "bin", "reflux")
	}
	return nil
}

// demo is the state the steps build up, in the order they build it.
type demo struct {
	opts options

	env           *testenv.Env
	gitea         *testenv.Gitea
	revision      string
	source        *sourcev1.GitRepository
	kustomization *kustomizev1.Kustomization
	keys          clientKeys
	policy        *refluxv1.ReverseSyncPolicy
	reflux        *testenv.RefluxProcess
	scenario      scenarioState
}

// clientKeys are files a user needs to check reflux's signatures.
type clientKeys struct {
	// signingPub is the armored public half of the signing key.
	signingPub string
}

// newDemo validates opts and returns a demo that has started nothing.
func newDemo(opts options) (*demo, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	return &demo{opts: opts}, nil
}

// setupSteps bring up the environment, the sample app under Flux and
// reflux, and end when the policy reports Ready.
func (d *demo) setupSteps() []step {
	return []step{
		{name: "check the binaries", run: d.checkBinaries},
		{name: "start kube-apiserver, etcd, Flux and Gitea", run: d.startEnvironment, logs: d.startLogs},
		{name: "push the sample app to Gitea", run: d.pushApp, logs: d.giteaLogs},
		{name: "create the GitRepository and Kustomization and wait for Flux", run: d.applyApp, logs: d.fluxLogs},
		{name: "create the signing key and ReverseSyncPolicy", run: d.createPolicy},
		{name: "start reflux manager", run: d.startReflux, logs: d.refluxLogs},
		{name: "wait for the policy to be Ready", run: d.waitForPolicy, logs: d.refluxLogs},
	}
}

// teardown stops reflux before the environment, so it leaves while the
// apiserver it watches is still there, then stops and removes the rest.
// It is safe after a partial setup.
func (d *demo) teardown() error {
	var errs []error
	if d.reflux != nil {
		errs = append(errs, d.reflux.Stop())
	}
	if d.gitea != nil {
		errs = append(errs, d.gitea.Stop())
	}
	if d.env != nil {
		errs = append(errs, d.env.Stop())
	}
	return errors.Join(errs...)
}

// started reports whether setup got far enough to need a teardown.
func (d *demo) started() bool {
	return d.env != nil || d.gitea != nil || d.reflux != nil
}

// findRepoRoot walks up from dir to the module root, as testenv does, so
// both agree on bin/.
func findRepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving %q: %w", dir, err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run the demo inside the reflux repository")
		}
		dir = parent
	}
}
