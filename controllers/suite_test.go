package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/metrics"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

var (
	// k8sClient talks to the real kube-apiserver started in TestMain.
	k8sClient client.Client
	// testEnv is that apiserver's environment.
	testEnv *envtest.Environment
)

// TestMain starts a real etcd and kube-apiserver (built by `make testbin`)
// with Flux's and reflux's CRDs, and runs the reconcilers under test in a
// manager against it.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	testEnv = &envtest.Environment{
		BinaryAssetsDirectory: filepath.Join("..", "bin"),
		CRDDirectoryPaths: []string{
			filepath.Join("..", "config", "crd", "bases"),
			filepath.Join("..", "bin", "source-controller-crd"),
			filepath.Join("..", "bin", "kustomize-controller-crd"),
		},
		ErrorIfCRDPathMissing: true,
	}
	env := testEnv
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest (run `make testbin`): %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()
	scheme, err := newScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Tests read straight from the apiserver: a cached read right after a
	// write would race the informer.
	if k8sClient, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	policies := &ReverseSyncPolicyReconciler{
		Client:        mgr.GetClient(),
		Metrics:       runtimectrl.NewMetrics(mgr, metrics.NewRecorder()),
		RetryInterval: 2 * time.Second,
	}
	if err := policies.SetupWithManager(ctx, mgr, ReverseSyncPolicyReconcilerOptions{MaxConcurrentReconciles: 2}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		fmt.Fprintln(os.Stderr, "cache did not sync")
		return 1
	}
	return m.Run()
}

// newScheme holds every type the reconcilers read or write: Kubernetes'
// own, reflux's, and Flux's Kustomization and sources. reflux's own scheme
// is the manager's wiring (cmd/manager), which imports this package.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, refluxv1.AddToScheme, kustomizev1.AddToScheme, sourcev1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}
