package drift

import (
	"fmt"
	"sync"

	"github.com/fluxcd/pkg/ssa/normalize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// mergeInProcess computes what dryRun asks the apiserver for, without a
// request: the apiserver's own field manager (k8s.io/apimachinery's
// managedfields, the code behind every server-side apply) applies obj (from
// prepare) to the live object as Flux's field owner with forced ownership,
// typed by the cluster's OpenAPI schema. The result is normalised as dryRun
// normalises the server's answer, so compare treats both alike.
//
// What the apiserver does besides merging is not done here (see the
// package doc): defaulting, admission, validation (so an immutable field
// is never refused).
func (d *Detector) mergeInProcess(in Input, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := in.Live.GroupVersionKind()
	tc, err := d.opts.types.TypeConverter(gvk)
	if err != nil {
		return nil, fmt.Errorf("in-process apply of %s/%s: %w", in.Live.GetNamespace(), in.Live.GetName(), err)
	}
	fm, err := d.opts.managers.get(gvk, tc)
	if err != nil {
		return nil, fmt.Errorf("in-process apply of %s/%s: %w", in.Live.GetNamespace(), in.Live.GetName(), err)
	}
	// The resourceVersion precondition prepare sets is the apiserver's to
	// check; here the merge is over exactly in.Live, so it always holds.
	obj.SetResourceVersion("")
	merged, err := fm.Apply(in.Live.DeepCopy(), obj, d.opts.fieldOwner, true)
	if err != nil {
		return nil, fmt.Errorf("in-process apply of %s/%s: %w", in.Live.GetNamespace(), in.Live.GetName(), err)
	}
	out, ok := merged.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("in-process apply of %s/%s returned %T", in.Live.GetNamespace(), in.Live.GetName(), merged)
	}
	out.SetResourceVersion(in.Live.GetResourceVersion())
	if err := normalize.DryRunUnstructured(out); err != nil {
		return nil, fmt.Errorf("normalizing in-process apply result: %w", err)
	}
	return out, nil
}

// sameVersion is the field manager's object converter. Desired and Live
// share a version, so the only conversions asked for are of managedFields
// entries recorded at another version; like the apiserver for a version it
// no longer serves, it reports those as unregistered, and the merge drops
// them.
type sameVersion struct{}

func (sameVersion) Convert(in, out, _ any) error {
	return fmt.Errorf("in-process apply converts no objects")
}

func (sameVersion) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	gvk := in.GetObjectKind().GroupVersionKind()
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk}); ok && target == gvk {
		return in, nil
	}
	return nil, runtime.NewNotRegisteredGVKErrForTarget("in-process apply", gvk, gv)
}

func (sameVersion) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", fmt.Errorf("in-process apply converts no field labels")
}

// noDefaults is the field manager's defaulter. The apiserver's defaults
// live in k8s.io/kubernetes and the CRDs' structural schemas; the live
// object already carries them for every field it has.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// unstructuredCreater makes the empty objects the field manager fills.
type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// fieldManagers keeps one field manager per kind, as the apiserver keeps
// one per resource and shares it between requests: building one per
// comparison cost every live event its construction (issue 22 §3). A
// manager is rebuilt when its kind's type converter changed (a CRD's new
// schema). It is safe for concurrent use.
type fieldManagers struct {
	mu     sync.Mutex
	byKind map[schema.GroupVersionKind]cachedManager
}

type cachedManager struct {
	tc managedfields.TypeConverter
	fm *managedfields.FieldManager
}

// get returns the field manager of gvk typed by tc.
func (m *fieldManagers) get(gvk schema.GroupVersionKind, tc managedfields.TypeConverter) (*managedfields.FieldManager, error) {
	m.mu.Lock()
	c, ok := m.byKind[gvk]
	m.mu.Unlock()
	// Converters compare by identity: OpenAPITypes hands out the same one
	// until the document changes.
	if ok && c.tc == tc {
		return c.fm, nil
	}
	// The hub is the object's own version: Desired and Live share it
	// (validate), so nothing is converted but other versions' entries.
	fm, err := managedfields.NewDefaultFieldManager(tc, sameVersion{}, noDefaults{}, unstructuredCreater{},
		gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byKind == nil {
		m.byKind = map[schema.GroupVersionKind]cachedManager{}
	}
	m.byKind[gvk] = cachedManager{tc: tc, fm: fm}
	return fm, nil
}
