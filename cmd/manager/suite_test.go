package manager

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	// k8sClient talks to the real kube-apiserver started in TestMain.
	k8sClient client.Client
	// testEnv is that apiserver's environment.
	testEnv *envtest.Environment
)

// TestMain starts a real etcd and kube-apiserver (built by `make testbin`)
// for the wiring that talks to it: the record key Secret and the
// impersonating clients. The controllers' own suite runs the reconcilers.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	testEnv = &envtest.Environment{BinaryAssetsDirectory: filepath.Join("..", "..", "bin")}
	cfg, err := testEnv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest (run `make testbin`): %v\n", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()
	scheme, err := NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if k8sClient, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
