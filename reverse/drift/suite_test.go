package drift

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	// cfg reaches the real kube-apiserver started in TestMain.
	cfg *rest.Config
	// k8sClient is a client of that apiserver with the default scheme.
	k8sClient client.Client
)

// TestMain starts a real etcd and kube-apiserver (built by `make testbin`).
// The detector only meets core and apps objects, so no CRDs are loaded.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	// A fuzz worker runs only FuzzPointer, which needs no apiserver, and is
	// killed when fuzzing ends: an apiserver it started would outlive it.
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return m.Run()
	}
	env := &envtest.Environment{BinaryAssetsDirectory: filepath.Join("..", "..", "bin")}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest (run `make testbin`): %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()
	if k8sClient, err = client.New(cfg, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
