package drift

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/internal/refluxtest"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse/governor"
)

const (
	ns       = "shop"
	repo     = "shop.git"
	ksName   = "shop"
	userName = "alice@example.com"
)

var (
	env     *testenv.Env
	alice   ctrlclient.Client
	ks      *kustomizev1.Kustomization
	auditDB *audit.Store
	logPath string
	// refluxConfig connects as reflux's installed ServiceAccount.
	refluxConfig *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	scheme, err := manager.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(ctx, testenv.Options{Scheme: scheme, AuditWebhook: &testenv.AuditWebhook{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	logPath = filepath.Join(env.Dir, "reflux.log")
	code := 1
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the drift fixture:", err)
	} else {
		code = m.Run()
	}
	if code != 0 {
		_ = env.DumpLogs(os.Stdout, 256<<10)
		_ = testenv.DumpFiles(os.Stdout, 256<<10, logPath)
	}
	return code
}

// setup serves the audit webhook, pushes the shop, lets Flux apply it,
// creates the policy and starts reflux.
func setup(ctx context.Context) error {
	auditDB = audit.NewStore()
	if err := serveAudit(auditDB); err != nil {
		return err
	}
	user, err := env.AddBreakGlassUser(ctx, userName)
	if err != nil {
		return err
	}
	// reflux runs as config/default installs it, even in-process: a verb
	// config/rbac lacks fails these journeys too.
	installed, err := testenv.InstalledUser()(ctx, env)
	if err != nil {
		return err
	}
	refluxConfig = installed.Config
	if alice, err = ctrlclient.New(user.Config, ctrlclient.Options{Scheme: env.Scheme}); err != nil {
		return err
	}
	if _, err := env.Git.PushDir(ctx, repo, "testdata/shop"); err != nil {
		return err
	}
	if err := env.CreateNamespace(ctx, ns); err != nil {
		return err
	}
	src, err := env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: "shop", Namespace: ns, Repo: repo})
	if err != nil {
		return err
	}
	ks, err = env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: ksName, Namespace: ns, Source: src.Name, Path: "./overlays/prod", TargetNamespace: ns, Prune: true,
		// Only forced reconciles run during the tests.
		Interval: 10 * time.Minute,
		Customize: func(k *kustomizev1.Kustomization) {
			k.Labels = map[string]string{"reflux.dev/tier": "apps"}
			k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
		},
	})
	if err != nil {
		return err
	}
	if err := env.WaitForReady(ctx, src); err != nil {
		return err
	}
	if err := env.WaitForReady(ctx, ks); err != nil {
		return err
	}
	if err := env.Client.Create(ctx, policy()); err != nil {
		return err
	}
	if err := setupWriteBack(ctx); err != nil {
		return err
	}
	_, err = startReflux()
	return err
}

func policy() *refluxv1.ReverseSyncPolicy {
	noHold := false
	p := &refluxv1.ReverseSyncPolicy{}
	p.Name, p.Namespace = "apps", ns
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{"reflux.dev/tier": "apps"}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	p.Spec.Git.ReportOnly = true
	p.Spec.Rules = []refluxv1.Rule{{
		Name: "audit-settings-unheld", Kinds: []string{"ConfigMap"}, Fields: []string{"/data/RETENTION_DAYS"},
		Action: refluxv1.AlertAction, Severity: refluxv1.SeverityMedium, Hold: &noHold,
	}}
	return p
}

// reflux is one running reflux manager.
type reflux struct {
	engine   *governor.Governor
	registry *prometheus.Registry
	stop     func()
}

var current *reflux

// startReflux starts reflux in-process with the same wiring as `reflux
// manager`, logging to logPath.
func startReflux() (*reflux, error) {
	r, err := refluxtest.Start(refluxtest.Options{Config: refluxConfig, LogPath: logPath, Debug: true,
		Controllers: manager.Options{
			Concurrent: 2, Audit: auditDB, PolicyRetry: 2 * time.Second, ArtifactRetry: 2 * time.Second,
			// The test git server speaks plain HTTP on loopback.
			AllowInsecureHTTP: true, GitCacheDir: filepath.Join(env.Dir, "git-cache"),
		}})
	if err != nil {
		return nil, err
	}
	current = &reflux{engine: r.Governor, registry: r.Registry, stop: r.Stop}
	return current, nil
}

// serveAudit receives the apiserver's audit webhook.
func serveAudit(store *audit.Store) error {
	l, err := net.Listen("tcp", env.AuditWebhookAddr)
	if err != nil {
		return fmt.Errorf("listening for audit events on %s: %w", env.AuditWebhookAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/audit", &audit.Handler{Store: store, Log: logr.Discard()})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "audit server:", err)
		}
	}()
	return nil
}

var _ = sourcev1.GitRepositoryKind
