package v1alpha1

// Reasons for the Drifted condition when reflux's own RBAC falls short.
const (
	// WatchForbiddenReason means reflux's ServiceAccount may not list or
	// watch a kind the Kustomization applies, so drift of that kind is not
	// detected; the message names the kind, the verb and the fix (a
	// ClusterRole labelled WorkloadsAggregationLabel). The other kinds'
	// drift is still detected and recorded.
	WatchForbiddenReason = "WatchForbidden"
)

// WorkloadsAggregationLabel labels the ClusterRoles aggregated into
// reflux-workloads (config/rbac/workloads_role.yaml), the role under which
// reflux watches, dry-runs and holds the objects Flux applies.
const WorkloadsAggregationLabel = "rbac.reflux.dev/aggregate-to-workloads"
