package edit_test

import (
	"context"
	"fmt"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/edit"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// Plan returns the verified file changes; Write applies them.
func ExamplePlan() {
	res, err := edit.Plan(context.Background(), edit.Options{
		Build: kustomize.BuildOptions{Root: "../testdata/multi-doc"},
	}, edit.Change{
		Object:  origin.ObjectRef{Kind: "StatefulSet", Namespace: "cache", Name: "redis"},
		Pointer: "/spec/replicas",
		Value:   int64(5),
	})
	if err != nil {
		panic(err)
	}
	for file := range res.Files {
		fmt.Println(res.Scope, file)
	}
	// Output:
	// origin all-in-one.yaml
}
