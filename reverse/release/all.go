package release

import (
	"context"
	"errors"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Drift is the drift of every object of one release.
type Drift struct {
	// Release is the release the objects were rendered for.
	Release Ref
	// Objects are in manifest order, as helm-controller lists them.
	Objects []ObjectDrift
}

// ObjectDrift is one object of a release and its drift.
type ObjectDrift struct {
	// Desired is the object as Desired returns it.
	Desired *unstructured.Unstructured
	Result
}

// DetectAll diffs every object of the release hr last made, as
// helm-controller's drift detection does at a reconcile: it reads each
// live object, selects hr's ignore rules for it, and detects. desired is
// what Desired returns for that release. An object that cannot be diffed
// is left out and its error joined into the one returned, as
// helm-controller's diff goes on gracefully past it; the others are still
// in the result.
func (d *Detector) DetectAll(ctx context.Context, hr *helmv2.HelmRelease, desired []*unstructured.Unstructured) (Drift, error) {
	ref, err := Latest(hr)
	if err != nil {
		return Drift{}, err
	}
	out := Drift{Release: ref, Objects: make([]ObjectDrift, 0, len(desired))}
	dd := hr.GetDriftDetection()
	var errs []error
	for _, obj := range desired {
		res, err := d.detectOne(ctx, obj, dd)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", describe(obj), err))
			continue
		}
		out.Objects = append(out.Objects, ObjectDrift{Desired: obj, Result: res})
	}
	return out, errors.Join(errs...)
}

func (d *Detector) detectOne(ctx context.Context, obj *unstructured.Unstructured, dd helmv2.DriftDetection) (Result, error) {
	paths, err := IgnorePaths(dd.Ignore, obj)
	if err != nil {
		return Result{}, err
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	switch err := d.client.Get(ctx, client.ObjectKeyFromObject(obj), live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return Result{}, fmt.Errorf("reading live object: %w", err)
	}
	return d.Detect(ctx, Input{Desired: obj, Live: live, IgnorePaths: paths, Mode: dd.GetMode()})
}
