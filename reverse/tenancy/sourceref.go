package tenancy

import (
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/acl"
)

// CheckSourceRef refuses a Kustomization whose sourceRef points into
// another namespace when noCrossNamespaceRefs is set, with the error and
// message kustomize-controller gives (an acl.AccessDeniedError; callers
// report it with reason acl.AccessDeniedReason). Otherwise it returns nil.
func CheckSourceRef(ks *kustomizev1.Kustomization, noCrossNamespaceRefs bool) error {
	ref := ks.Spec.SourceRef
	if !noCrossNamespaceRefs || ref.Namespace == "" || ref.Namespace == ks.Namespace {
		return nil
	}
	return acl.AccessDeniedError(fmt.Sprintf("can't access '%s/%s/%s', cross-namespace references have been blocked",
		ref.Kind, ref.Namespace, ref.Name))
}
