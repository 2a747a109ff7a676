package release

import (
	"context"
	"errors"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// FieldOwner is the field manager helm-controller applies, upgrades and
// diffs as (Helm's kube.ManagedFieldsManager, set by helm-controller).
const FieldOwner = "helm-controller"

// Client is what a Detector asks the apiserver: the dry-run apply, and
// the live objects when it diffs a whole release. controller-runtime's
// client.Client satisfies it.
type Client interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
	Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error
}

// Detector finds the drift of the objects of a Helm release as
// helm-controller's drift detection finds it. It is safe for concurrent
// use.
type Detector struct {
	client Client
}

// New returns a Detector that asks the apiserver through c: a client
// with the rights helm-controller's apply has (patch on every object of
// the release), or one impersonating the HelmRelease's ServiceAccount.
func New(c Client) (*Detector, error) {
	if c == nil {
		return nil, errors.New("release: client must not be nil")
	}
	return &Detector{client: c}, nil
}

// Input is one object of a release and its live state.
type Input struct {
	// Desired is the object as Desired returns it.
	Desired *unstructured.Unstructured
	// Live is the object from the cluster, managedFields included, or nil
	// when it does not exist. It is never modified.
	Live *unstructured.Unstructured
	// IgnorePaths are the JSON pointers the HelmRelease's ignore rules
	// select for Desired (IgnorePaths).
	IgnorePaths []string
	// Mode is the HelmRelease's spec.driftDetection.mode; empty means
	// disabled, as in helm-controller.
	Mode helmv2.DriftDetectionMode
}

// Field is one drifted field, in the shape reverse/drift gives the engine.
// Pointer is the path of the field in helm-controller's JSON patch from
// live to the dry run: list elements are paired by index and numbered as
// live numbers them, an element only the desired object has as that
// numbers it. GitPointer equals Pointer but for an element only live has,
// which it points at the list's end ("-"). GitValue is the value
// helm-controller's correction writes: the dry run's, with server
// defaults. ChangeType is Add for a field live has and the dry run does
// not (a patch "remove"), Update for a changed value ("replace") and
// Remove for a field live lacks ("add").
// FluxReverts is true when helm-controller's next reconcile reverts the
// field, or would once reflux's hold is lifted: drift correction in
// enabled mode. An upgrade reverts every field whatever FluxReverts says:
// it applies the whole manifest with forced ownership.
type Field = drift.Field

// Result is the drift of one object of a release.
type Result struct {
	// Fields are the drifted fields, ordered by pointer: one for each
	// operation of helm-controller's JSON patch, taken leaf by leaf.
	Fields []Field
	// Counts are helm-controller's own counts of the object's drift, as
	// its DriftDetected message gives them. Its patch replaces a small map
	// or list whole when that is shorter than the changes inside it
	// (jsondiff.Rationalize), so several Fields can count as one change.
	Counts Counts
	// Excluded is why helm-controller leaves the object out. Fields are
	// empty unless Excluded.Diffed().
	Excluded Exclusion
	// Missing is set when the object does not exist: helm-controller
	// reports it "removed", and its correction creates it.
	Missing bool
	// RevertedAt says when helm-controller takes the drift back.
	RevertedAt Reversion
}

// Reversion is when helm-controller reverts an object's drift.
type Reversion string

const (
	// AtReconcile: the next reconcile corrects it (mode enabled).
	AtReconcile Reversion = "Reconcile"
	// AfterHold: the first reconcile after reflux lifts its hold corrects
	// it (mode enabled, held by reflux), unless an upgrade comes first.
	AfterHold Reversion = "AfterHold"
	// AtUpgrade: only the next upgrade does (mode warn or disabled, or an
	// object the chart or someone else excluded).
	AtUpgrade Reversion = "Upgrade"
)

// Detect returns the drift of in.Live from in.Desired as helm-controller
// sees it. For an object it diffs, it makes one request: a server-side
// dry-run apply of in.Desired as helm-controller with forced ownership,
// conditioned on in.Live's resourceVersion. It returns drift.ErrStale
// when the live object changed since, and drift.ErrInvalidInput when the
// input is incomplete or names two objects.
func (d *Detector) Detect(ctx context.Context, in Input) (Result, error) {
	if err := in.validate(); err != nil {
		return Result{}, err
	}
	excl, err := Exclude(in.Desired, in.Live, in.IgnorePaths)
	if err != nil {
		return Result{}, err
	}
	res := Result{Excluded: excl, Missing: in.Live == nil, RevertedAt: reversion(in.Mode, excl)}
	if !excl.Diffed() || res.Missing {
		return res, nil
	}
	dry, err := d.dryRun(ctx, in)
	if err != nil {
		return Result{}, err
	}
	reverts := in.Mode == helmv2.DriftDetectionEnabled
	if res.Fields, res.Counts, err = compare(in, dry, reverts); err != nil {
		return Result{}, fmt.Errorf("comparing %s: %w", describe(in.Desired), err)
	}
	return res, nil
}

// reversion says when helm-controller reverts an object's drift: drift
// correction runs only in enabled mode (CorrectClusterDrift) and only on
// what it diffed; an upgrade reverts everything it renders.
func reversion(mode helmv2.DriftDetectionMode, excl Exclusion) Reversion {
	switch {
	case mode != helmv2.DriftDetectionEnabled:
		return AtUpgrade
	case excl == NotExcluded:
		return AtReconcile
	case excl == HeldByReflux:
		return AfterHold
	}
	return AtUpgrade
}

func (in Input) validate() error {
	if in.Desired == nil {
		return fmt.Errorf("%w: a desired object is required", drift.ErrInvalidInput)
	}
	if in.Live == nil {
		return nil
	}
	dk, lk := in.Desired.GroupVersionKind(), in.Live.GroupVersionKind()
	if dk != lk || in.Desired.GetName() != in.Live.GetName() || in.Desired.GetNamespace() != in.Live.GetNamespace() {
		return fmt.Errorf("%w: desired %s and live %s differ", drift.ErrInvalidInput, describe(in.Desired), describe(in.Live))
	}
	// Ownership proves a reflux hold and names the writer of each field;
	// an informer that strips managedFields would hide both.
	if len(in.Live.GetManagedFields()) == 0 {
		return fmt.Errorf("%w: live %s has no managedFields; do not strip them from the cache", drift.ErrInvalidInput, describe(in.Live))
	}
	return nil
}

// DriftFields returns the fields as the Drift API records them.
func (r Result) DriftFields() []refluxv1.DriftField {
	return drift.Result{Fields: r.Fields}.DriftFields()
}

// LastModifier returns the most recent writer among the fields; nil when
// no field has one.
func (r Result) LastModifier() *refluxv1.Modifier {
	return drift.Result{Fields: r.Fields}.LastModifier()
}

// describe names an object as helm-controller's messages do:
// Kind/namespace/name, or Kind/name when cluster-scoped.
func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + "/" + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + "/" + obj.GetName()
}
