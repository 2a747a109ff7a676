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
// the node agent, reflux itself and Flux.
func DefaultAllowedManagers() []string {
	return []string{
		"kube-controller-manager",
		"kube-scheduler",
		"kubelet",
		"horizontal-pod-autoscaler",
		refluxv1.FieldManager,
		DefaultFieldOwner,
	}
}

// Option configures a Detector.
type Option func(*options)

type options struct {
	fieldOwner string
	allowed    map[string]bool
	strip      []ManagerRule
	// disallowed mirrors kustomize-controller's --override-manager flag.
	disallowed []string
}

// WithFieldOwner sets the field manager Flux applies as, for a
// kustomize-controller started with a non-default --controller-name.
func WithFieldOwner(name string) Option {
	return func(o *options) { o.fieldOwner = name }
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
	o := &options{fieldOwner: DefaultFieldOwner}
	WithAllowedManagers(DefaultAllowedManagers()...)(o)
	for _, opt := range opts {
		opt(o)
	}
	if o.fieldOwner == "" {
		return nil, errors.New("field owner must not be empty")
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
