package release

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	ssanormalize "github.com/fluxcd/pkg/ssa/normalize"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// The metadata Helm sets on every object it creates, and helm-controller's
// diff sets on the objects it compares (setHelmMetadata in
// internal/action/diff.go, after Helm's action/validate.go).
const (
	managedByLabel             = "app.kubernetes.io/managed-by"
	managedByHelm              = "Helm"
	releaseNameAnnotation      = "meta.helm.sh/release-name"
	releaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// Scoper tells namespaced kinds from cluster-scoped ones, through the
// apiserver's RESTMapper. controller-runtime's client.Client satisfies it.
type Scoper interface {
	IsObjectNamespaced(obj runtime.Object) (bool, error)
}

// Split reads a release manifest into its objects in manifest order, as
// helm-controller's diff reads it (fluxcd/pkg/ssa/utils.ReadObjects):
// List kinds are flattened, and documents that are not Kubernetes objects
// (empty ones, comments) are skipped.
func Split(manifest string) ([]*unstructured.Unstructured, error) {
	objs, err := ssautil.ReadObjects(strings.NewReader(manifest))
	if err != nil {
		return nil, fmt.Errorf("reading objects from release manifest: %w", err)
	}
	return objs, nil
}

// Desired returns the objects of rls as helm-controller's drift detection
// applies them in its dry run (action.Diff): split from the manifest,
// normalised with the scheme its diff client normalises with, labelled and
// annotated as Helm's, and with the release namespace set on each
// namespaced object the chart gives none. Cluster-scoped objects keep no
// namespace, and an object the chart places in a namespace stays there.
//
// An object whose kind the apiserver does not know cannot be placed; it
// is left out and named in the returned error, and the others are still
// returned, as helm-controller diffs the rest and reports the error.
func Desired(rls *helmrelease.Release, scope Scoper) ([]*unstructured.Unstructured, error) {
	if rls == nil {
		return nil, errors.New("release: no release")
	}
	objs, err := Split(rls.Manifest)
	if err != nil {
		return nil, err
	}
	if err := ssanormalize.UnstructuredListWithScheme(objs, normalizeScheme()); err != nil {
		return nil, fmt.Errorf("normalizing release objects: %w", err)
	}
	namespaced := scopeCache{scope: scope, known: map[schema.GroupVersionKind]bool{}}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	var errs []error
	for _, obj := range objs {
		setHelmMetadata(obj, rls.Name, rls.Namespace)
		if obj.GetNamespace() == "" {
			ok, err := namespaced.is(obj)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				obj.SetNamespace(rls.Namespace)
			}
		}
		out = append(out, obj)
	}
	return out, errors.Join(errs...)
}

// setHelmMetadata sets what Helm sets on every object it installs, so the
// dry run declares it as helm-controller's does.
func setHelmMetadata(obj *unstructured.Unstructured, name, namespace string) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[managedByLabel] = managedByHelm
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[releaseNameAnnotation] = name
	annotations[releaseNamespaceAnnotation] = namespace
	obj.SetAnnotations(annotations)
}

// scopeCache asks the Scoper once per kind, as helm-controller's diff does.
type scopeCache struct {
	scope Scoper
	known map[schema.GroupVersionKind]bool
}

func (c scopeCache) is(obj *unstructured.Unstructured) (bool, error) {
	gvk := obj.GroupVersionKind()
	if ok, seen := c.known[gvk]; seen {
		return ok, nil
	}
	if c.scope == nil {
		return false, errors.New("release: a Scoper is needed to place objects without a namespace")
	}
	ok, err := c.scope.IsObjectNamespaced(obj)
	if err != nil {
		return false, fmt.Errorf("telling whether %s %s is namespaced: %w", gvk.Kind, obj.GetName(), err)
	}
	c.known[gvk] = ok
	return ok, nil
}

// normalizeScheme is the scheme helm-controller's diff client normalises
// the manifest with: controller-runtime's default, client-go's global
// scheme, to which Helm's pkg/kube adds apiextensions v1 and v1beta1 in
// its init. It is built once here and never changed, rather than taken
// from client-go's mutable global.
var normalizeScheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiextensionsv1beta1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("release: building the normalisation scheme: %v", err)) // static registrations only
		}
	}
	return s
})
