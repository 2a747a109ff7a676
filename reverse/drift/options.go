package drift

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// DefaultFieldOwner is the field manager kustomize-controller applies as.
const DefaultFieldOwner = "kustomize-controller"

// ManagerRule matches managedFields entries by manager name and operation,
// the way fluxcd/pkg/ssa matches its cleanup FieldManagers.
type ManagerRule struct {
	// Name of the manager; a prefix unless Exact is set.
	Name string
	// Exact requires the whole manager name to equal Name.
	Exact bool
	// Operation is Apply or Update; empty matches both.
	Operation metav1.ManagedFieldsOperationType
}

// Matches reports whether the rule matches a managedFields entry. Entries
// for subresources never match: Flux's cleanup leaves them alone.
func (r ManagerRule) Matches(e metav1.ManagedFieldsEntry) bool {
	if e.Subresource != "" || (r.Operation != "" && e.Operation != r.Operation) {
		return false
	}
	if r.Exact {
		return e.Manager == r.Name
	}
	return strings.HasPrefix(e.Manager, r.Name)
}

// StripRules returns the managers kustomize-controller v1.9.6 folds into
// its own Apply entry before every apply (its `apply` step), so that fields
// they added and Git does not declare are deleted: kubectl (Apply and
// Update), before-first-apply (Update) and the controller's own Update
// entries. Matching is by prefix, as in Flux, so kubectl-edit and
// kubectl-client-side-apply match too.
func StripRules(fieldOwner string) []ManagerRule {
	return []ManagerRule{
		{Name: "kubectl", Operation: metav1.ManagedFieldsOperationApply},
		{Name: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate},
		{Name: "before-first-apply", Operation: metav1.ManagedFieldsOperationUpdate},
		{Name: fieldOwner, Operation: metav1.ManagedFieldsOperationUpdate},
	}
}

// DefaultAllowedManagers returns the managers whose writes are never drift:
// the control plane (the HPA writes replicas as kube-controller-manager),
// the node agent, reflux itself and Flux: kustomize-controller, and the
// other Flux controllers, which write their finalizers onto the objects
// they reconcile (helm-controller's on every HelmRelease a Kustomization
// applies, source-controller's on its sources).
func DefaultAllowedManagers() []string {
	return []string{
		"kube-controller-manager",
		"kube-scheduler",
		"kubelet",
		"horizontal-pod-autoscaler",
		refluxv1.FieldManager,
		DefaultFieldOwner,
		"helm-controller",
		"source-controller",
		"notification-controller",
		"image-reflector-controller",
		"image-automation-controller",
	}
}

// Option configures a Detector.
type Option func(*options)

type options struct {
	fieldOwner string
	// types, when set, selects the in-process comparison; managers keeps
	// its field managers, shared by the Detectors WithClient makes.
	types     TypeResolver
	managers  *fieldManagers
	allowed   map[string]bool
	strip     []ManagerRule
	inProcess bool
	// disallowed mirrors kustomize-controller's --override-manager flag.
	disallowed []string
}

// WithFieldOwner sets the field manager Flux applies as, for a
// kustomize-controller started with a non-default --controller-name.
func WithFieldOwner(name string) Option {
	return func(o *options) { o.fieldOwner = name }
}

// Comparison is how a Detector learns what Flux's apply would make of the
// live object.
type Comparison string

const (
	// ComparisonDryRun asks the apiserver: a server-side dry-run apply,
	// which needs the `patch` verb on the object. The default.
	ComparisonDryRun Comparison = "dry-run"
	// ComparisonInProcess merges in-process with the apiserver's field
	// manager code and the cluster's OpenAPI schema, so get, list and watch
	// are enough; see the package doc for what it cannot see.
	ComparisonInProcess Comparison = "in-process"
)

// ParseComparison reads a --comparison flag value.
func ParseComparison(s string) (Comparison, error) {
	switch c := Comparison(s); c {
	case ComparisonDryRun, ComparisonInProcess:
		return c, nil
	case "":
		return ComparisonDryRun, nil
	default:
		return "", fmt.Errorf("unknown comparison %q: want %q or %q", s, ComparisonDryRun, ComparisonInProcess)
	}
}

// WithInProcessComparison selects ComparisonInProcess, typing objects with
// types (NewOpenAPITypes over the cluster's discovery client).
func WithInProcessComparison(types TypeResolver) Option {
	return func(o *options) {
		o.types = types
		o.inProcess = true
	}
}

// WithAllowedManagers replaces the allow-list: managers whose writes are
// never drift. Names match exactly. Extend DefaultAllowedManagers() to keep
// the defaults.
func WithAllowedManagers(names ...string) Option {
	return func(o *options) {
		o.allowed = make(map[string]bool, len(names))
		for _, n := range names {
			o.allowed[n] = true
		}
	}
}

// WithStripRules replaces the managers Flux strips before applying. The
// default is StripRules(fieldOwner).
func WithStripRules(rules ...ManagerRule) Option {
	return func(o *options) { o.strip = append([]ManagerRule(nil), rules...) }
}

// WithOverrideManagers adds managers Flux also strips, as
// kustomize-controller's --override-manager flag does (both operations).
func WithOverrideManagers(names ...string) Option {
	return func(o *options) { o.disallowed = append(o.disallowed, names...) }
}

func newOptions(opts []Option) (*options, error) {
	o := &options{fieldOwner: DefaultFieldOwner, managers: &fieldManagers{}}
	WithAllowedManagers(DefaultAllowedManagers()...)(o)
	for _, opt := range opts {
		opt(o)
	}
	if o.fieldOwner == "" {
		return nil, errors.New("field owner must not be empty")
	}
	if o.inProcess && o.types == nil {
		return nil, errors.New("in-process comparison needs a type resolver")
	}
	if o.strip == nil {
		o.strip = StripRules(o.fieldOwner)
	}
	for _, n := range o.disallowed {
		if n == "" {
			return nil, fmt.Errorf("override manager must not be empty")
		}
		o.strip = append(o.strip,
			ManagerRule{Name: n, Operation: metav1.ManagedFieldsOperationApply},
			ManagerRule{Name: n, Operation: metav1.ManagedFieldsOperationUpdate})
	}
	return o, nil
}

// stripped reports whether Flux folds the entry into its own before applying.
func (o *options) stripped(e metav1.ManagedFieldsEntry) bool {
	for _, r := range o.strip {
		if r.Matches(e) {
			return true
		}
	}
	return false
}

// isFlux reports whether the entry is Flux's own apply.
func (o *options) isFlux(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == o.fieldOwner && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}
