package drift_test

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/reverse/drift"
)

// Detect the drift of a live object from a watch event against the object
// Flux renders for it. (Not run: it needs an apiserver.)
func ExampleDetector_Detect() {
	var (
		c             client.Client              // the manager's client
		rendered, ev  *unstructured.Unstructured // from the render and the watch event
		spec          = struct{ Force bool }{}   // the Kustomization's spec
		ignoreForThis []string                   // its spec.ignore paths selecting this object
	)
	d, err := drift.New(c, drift.WithAllowedManagers(append(drift.DefaultAllowedManagers(), "keda-operator")...))
	if err != nil {
		panic(err)
	}
	res, err := d.Detect(context.Background(), drift.Input{
		Desired: rendered, Live: ev, IgnorePaths: ignoreForThis, Force: spec.Force,
	})
	switch {
	case errors.Is(err, drift.ErrStale):
		return // the next event carries the newer object
	case err != nil:
		panic(err)
	case res.Skipped != "":
		return // Flux does not apply the object
	}
	for _, f := range res.Fields {
		fmt.Println(f.Pointer, f.ChangeType, f.GitValue, "->", f.LiveValue, "reverted by Flux:", f.FluxReverts)
	}
}
