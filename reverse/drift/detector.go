package drift

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

var (
	// ErrStale means the live object changed, or was deleted, after the
	// caller saw it, so its drift cannot be told from it. The watch event
	// for the newer version will follow.
	ErrStale = errors.New("live object is stale")
	// ErrInvalidInput means Desired or Live is missing, they name different
	// objects or versions, or Live has no managedFields.
	ErrInvalidInput = errors.New("invalid drift input")
)

// Detector finds the drift of live objects exactly as Flux sees it. It is
// safe for concurrent use.
type Detector struct {
	client client.Client
	opts   *options
}

// New returns a Detector that asks the apiserver through c.
func New(c client.Client, opts ...Option) (*Detector, error) {
	if c == nil {
		return nil, errors.New("drift: client must not be nil")
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("drift: %w", err)
	}
	return &Detector{client: c, opts: o}, nil
}

// Input is one live object and what Flux would apply over it.
type Input struct {
	// Desired is the rendered object, as Flux would apply it, at the
	// revision Flux last applied: fields a newer revision adds would read
	// as removed live. (Fields it changes or drops do not: their live
	// values are still Flux's own, and Flux's writes are not drift.)
	Desired *unstructured.Unstructured
	// Live is the object from the watch event, managedFields included; it
	// is never modified.
	Live *unstructured.Unstructured
	// IgnorePaths are JSON pointers that never drift, as the Kustomization's
	// spec.ignore rules select them for this object. "" ignores the object.
	IgnorePaths []string
	// Force is the Kustomization's spec.force.
	Force bool
}

// Field is one drifted field. It maps one to one onto refluxv1.DriftField.
type Field struct {
	// Pointer is the field's JSON pointer. List elements are numbered as in
	// the live object; an element only Git has is numbered as in Git.
	Pointer string
	// GitPointer is the field's JSON pointer in the rendered (Git) object:
	// list elements numbered as in Git, matched by key, and "-" (RFC
	// 6902's end of the list) for an element Git does not have. It differs
	// from Pointer only where live and Git order a list differently.
	GitPointer string
	// ChangeType: Add (live has it, Git does not), Update or Remove (Git
	// declares it, live lacks it).
	ChangeType refluxv1.ChangeType
	// GitValue and LiveValue are compact JSON; empty when absent. Secret
	// data is masked.
	GitValue, LiveValue string
	// FluxReverts is false when Flux's next apply leaves the live value.
	FluxReverts bool
	// Modifier is the managedFields entry that last wrote the field, when
	// one owns it.
	Modifier *refluxv1.Modifier
}

// Result is the drift of one object.
type Result struct {
	// Fields are the drifted fields, ordered by pointer.
	Fields []Field
	// Skipped is set when Flux does not apply the object at all, because of
	// how Git marks it; then there are no fields.
	Skipped SkipReason
	// LiveExcluded is set when the live object carries an exclusion Flux
	// honours in-cluster (reconcile: disabled or ssa: Ignore), as a reflux
	// hold does. Flux leaves the object alone meanwhile; Fields still say
	// what drifted, and FluxReverts what Flux does once it is lifted.
	LiveExcluded SkipReason
	// Immutable is set when the apiserver refuses the dry run the way it
	// refuses Flux's apply when Git and live differ in an immutable field
	// (fluxcd/pkg/ssa/errors.IsImmutableError, which Flux also applies to
	// Invalid). Fields then hold only the fields Git declares, compared
	// without the server.
	Immutable bool
	// Recreate is set when Immutable and Flux is forced (spec.force or
	// kustomize.toolkit.fluxcd.io/force: enabled): Flux deletes the object
	// and creates it from Git.
	Recreate bool
}

// DriftFields returns the fields as the Drift API records them, before
// classification. Pointer is Field.Pointer, numbered as live numbers its
// lists; use Field.GitPointer where the rendered object's numbering is
// wanted.
func (r Result) DriftFields() []refluxv1.DriftField {
	out := make([]refluxv1.DriftField, 0, len(r.Fields))
	for _, f := range r.Fields {
		out = append(out, refluxv1.DriftField{
			Pointer:     f.Pointer,
			ChangeType:  f.ChangeType,
			GitValue:    f.GitValue,
			LiveValue:   f.LiveValue,
			FluxReverts: f.FluxReverts,
			Modifier:    f.Modifier,
		})
	}
	return out
}

// LastModifier returns the most recent writer among the fields, for
// refluxv1.DriftSpec.LastModifier; nil when no field has one.
func (r Result) LastModifier() *refluxv1.Modifier {
	var last *refluxv1.Modifier
	for _, f := range r.Fields {
		m := f.Modifier
		if m == nil {
			continue
		}
		if last == nil || (m.Time != nil && (last.Time == nil || !m.Time.Before(last.Time))) {
			last = m
		}
	}
	return last
}

// Detect returns the drift of in.Live from in.Desired. It makes at most one
// API request: a server-side dry-run apply of in.Desired as Flux's field
// owner with forced ownership, conditioned on in.Live's resourceVersion.
// It returns ErrStale when the live object has changed since.
//
// With WithInProcessComparison it makes no request at all beyond reading
// the OpenAPI schema once per group-version: the same merge is computed
// in-process, so it never returns ErrStale and never sets Immutable.
func (d *Detector) Detect(ctx context.Context, in Input) (Result, error) {
	if err := in.validate(); err != nil {
		return Result{}, err
	}
	if r := in.skip(); r != "" {
		return Result{Skipped: r}, nil
	}
	res := Result{LiveExcluded: excluded(in.Live)}
	sent, err := prepare(in)
	if err != nil {
		return Result{}, err
	}
	var dry *unstructured.Unstructured
	if d.opts.inProcess {
		dry, err = d.mergeInProcess(in, sent)
	} else {
		dry, err = d.dryRun(ctx, in, sent)
	}
	if errors.Is(err, errImmutable) {
		res.Immutable = true
		res.Recreate = forced(in.Force, in.Desired, in.Live)
		res.Fields, err = d.compareClientSide(in, res.Recreate)
		return res, err
	}
	if err != nil {
		return Result{}, err
	}
	res.Fields, err = d.compare(in, dry)
	return res, err
}

func (in Input) validate() error {
	if in.Desired == nil || in.Live == nil {
		return fmt.Errorf("%w: desired and live objects are required", ErrInvalidInput)
	}
	// The same version too: the dry run answers in Desired's version, and
	// its paths and managedFields mean nothing against another version's.
	dk, lk := in.Desired.GroupVersionKind(), in.Live.GroupVersionKind()
	if dk != lk || in.Desired.GetName() != in.Live.GetName() {
		return fmt.Errorf("%w: desired %s %q and live %s %q differ", ErrInvalidInput,
			dk, in.Desired.GetName(), lk, in.Live.GetName())
	}
	if ns := in.Desired.GetNamespace(); ns != "" && ns != in.Live.GetNamespace() {
		return fmt.Errorf("%w: desired namespace %q, live %q", ErrInvalidInput, ns, in.Live.GetNamespace())
	}
	// Every object written through the apiserver has managedFields; an
	// informer transform (cache.TransformStripManagedFields) removes them,
	// and without them no addition could be attributed or even seen.
	if len(in.Live.GetManagedFields()) == 0 {
		return fmt.Errorf("%w: live object has no managedFields; do not strip them from the cache", ErrInvalidInput)
	}
	return nil
}

// skip reports why Flux would not apply Desired over Live at all.
func (in Input) skip() SkipReason {
	for _, p := range in.IgnorePaths {
		if p == "" {
			return SkipIgnoredRoot
		}
	}
	return desiredSkip(in.Desired)
}
