package evaluate

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// Detector finds the drift of a live object as Flux sees it
// (reverse/drift.Detector).
type Detector interface {
	Detect(ctx context.Context, in drift.Input) (drift.Result, error)
	Unchanged(in drift.Input) bool
	Allowed(manager string) bool
	// FluxOwned reports whether manager is the field owner Flux applies as.
	FluxOwned(manager string) bool
	// FieldOwners reports whether Flux's apply, and whether a writer whose
	// writes can be drift, owns any of the fields at pointers live.
	FieldOwners(live *unstructured.Unstructured, pointers []string) (flux, writer bool, err error)
	// Written names the writer of a live object's latest change and the
	// fields it holds, without a render.
	Written(live *unstructured.Unstructured) (*refluxv1.Modifier, []refluxv1.WrittenField, error)
}

var _ Detector = &drift.Detector{}

// Impersonation gives the Detector whose dry runs go out as a user: a
// Kustomization's ServiceAccount.
type Impersonation interface {
	Detector(user string) (Detector, error)
}

// Attributor names the user behind a write to a live object, from the
// audit log.
type Attributor interface {
	// User returns the user and its groups of manager's write at about
	// at, or the zero Who when not known (yet).
	User(obj *unstructured.Unstructured, manager string, at time.Time) observe.Who
	// Deleter returns who deleted obj at about at, and false while the
	// audit log has not delivered the deletion (yet).
	Deleter(obj *unstructured.Unstructured, at time.Time) (reverse.Deleter, bool)
	// Writer returns the latest update of obj at or before at whose
	// writer is neither Flux nor one benign says never drifts: who made
	// a change no managedFields entry records, such as a removed field.
	Writer(obj *unstructured.Unstructured, at time.Time, benign func(manager string) bool) (reverse.AuditedWrite, bool)
}

// LiveStore reads the live watches' cache.
type LiveStore interface {
	Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool)
}

// Metrics counts dry runs (reverse/metrics.Metrics).
type Metrics interface {
	ObserveDryRun(resync bool)
}

// Options wire an Evaluator. Detector and Live are required.
type Options struct {
	Detector Detector
	// Impersonation dry-runs as a Kustomization's identity; nil dry-runs
	// as reflux for every Kustomization.
	Impersonation Impersonation
	// Attributor names users from the audit log; nil names none.
	Attributor Attributor
	Live       LiveStore
	Metrics    Metrics
	// ResyncQPS bounds the dry runs a resync makes per second, so that it
	// leaves the client's rate limit to the live path; default 10.
	ResyncQPS float64
	Now       func() time.Time
}

// Evaluator evaluates live changes. It is safe for concurrent use.
type Evaluator struct {
	opts    Options
	limiter *rate.Limiter
}

// New returns an Evaluator.
func New(opts Options) (*Evaluator, error) {
	if opts.Detector == nil || opts.Live == nil {
		return nil, fmt.Errorf("evaluate: Detector and Live are required")
	}
	if opts.ResyncQPS <= 0 {
		opts.ResyncQPS = 10
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Evaluator{opts: opts, limiter: rate.NewLimiter(rate.Limit(opts.ResyncQPS), 1)}, nil
}

// detectorFor returns the Detector whose dry runs go out as the
// Kustomization's identity.
func (e *Evaluator) detectorFor(g *reverse.Governed) (Detector, error) {
	if g.Identity == "" || e.opts.Impersonation == nil {
		return e.opts.Detector, nil
	}
	d, err := e.opts.Impersonation.Detector(g.Identity)
	if err != nil {
		return nil, fmt.Errorf("impersonating %s: %w", g.Identity, err)
	}
	return d, nil
}

// benign reports whether a manager's writes are never drift: reflux's own
// and the allowed managers'.
func (e *Evaluator) benign(manager string) bool {
	return manager == refluxv1.FieldManager || e.opts.Detector.Allowed(manager)
}
