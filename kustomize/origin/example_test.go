package origin_test

import (
	"context"
	"fmt"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// Lookup maps a rendered field to the overlay line that set it, with the
// chain of layers below it.
func ExampleIndex_Lookup() {
	ks, err := kustomize.LoadKustomization("../testdata/base-overlays/flux-kustomization-prod.yaml")
	if err != nil {
		panic(err)
	}
	idx, _, err := origin.Build(context.Background(), kustomize.BuildOptions{
		Root:          "../testdata/base-overlays",
		Kustomization: ks,
	})
	if err != nil {
		panic(err)
	}
	o, err := idx.Lookup(origin.ObjectRef{Kind: "Deployment", Namespace: "prod", Name: "podinfo"}, "/spec/replicas")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s:%d:%d %s\n", o.File, o.Line, o.Column, o.Kind)
	for _, l := range o.Chain {
		fmt.Println(" ", l.Position(), l.Kind)
	}
	// Output:
	// overlays/prod/kustomization.yaml:10:12 replicas
	//   base/deployment.yaml:6:13 resource
	//   overlays/prod/kustomization.yaml:10:12 replicas
}
