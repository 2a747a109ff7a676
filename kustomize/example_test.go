package kustomize_test

import (
	"context"
	"fmt"

	"github.com/reflux-dev/reflux/kustomize"
)

// Build renders a directory the way kustomize-controller would for a Flux
// Kustomization; here a plain directory without kustomization.yaml.
func ExampleBuild() {
	res, err := kustomize.Build(context.Background(), kustomize.BuildOptions{Root: "testdata/plain-dir"})
	if err != nil {
		panic(err)
	}
	for _, o := range res.Objects {
		fmt.Println(o.GetKind(), o.GetName())
	}
	// Output:
	// Deployment web
	// Service web
	// ServiceAccount web
	// ConfigMap web-config
}
