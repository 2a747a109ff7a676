package v1alpha1

// Reasons for the Drifted condition when reflux's own RBAC falls short.
const (
	// WatchForbiddenReason means reflux's ServiceAccount may not list or
	// watch a kind the Kustomization applies, so drift of that kind is not
	// detected; the message names the kind, the verb and the fix (a
	// ClusterRole labelled WorkloadsAggregationLabel). The other kinds'
	// drift is still detected and recorded.
	WatchForbiddenReason = "WatchForbidden"
	// ActionForbiddenReason means reflux's ServiceAccount, acting as
	// itself (the Kustomization names no ServiceAccount), was refused what
	// evaluating or holding a live change needs: the dry-run or hold patch
	// of a kind it may watch, or its own records. The message names the
	// verb and resource; the change is kept without a hold until the
	// permission is granted.
	ActionForbiddenReason = "ActionForbidden"
)

// WorkloadsAggregationLabel labels the ClusterRoles aggregated into
// reflux-workloads (config/rbac/workloads/workloads_role.yaml), the role under which
// reflux watches, dry-runs and holds the objects Flux applies.
const WorkloadsAggregationLabel = "rbac.reflux.dev/aggregate-to-workloads"
