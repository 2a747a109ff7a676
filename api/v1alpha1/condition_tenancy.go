package v1alpha1

// Reasons for the Drifted condition in a multi-tenant cluster. A refused
// cross-namespace sourceRef uses Flux's own reason,
// github.com/fluxcd/pkg/apis/acl.AccessDeniedReason, as
// kustomize-controller does.
const (
	// ImpersonationForbiddenReason means the Kustomization's
	// ServiceAccount, which reflux impersonates as kustomize-controller
	// does, lacks a permission reflux needs to evaluate or hold a live
	// change; the message names the verb and resource. The change is kept
	// without a hold until the permission is granted.
	ImpersonationForbiddenReason = "ImpersonationForbidden"
)
