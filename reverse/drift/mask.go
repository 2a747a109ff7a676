package drift

import (
	ssajsondiff "github.com/fluxcd/pkg/ssa/jsondiff"
	"github.com/wI2L/jsondiff"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// maskSecret replaces Secret data and stringData values with Flux's masks
// ("***", or "*** (before)" / "*** (after)" for a changed value), by
// handing the changes to fluxcd/pkg/ssa's own MaskSecretPatchData as the
// JSON patch from live to Git. The change itself, and which keys changed,
// is kept; the values never reach a drift record.
func maskSecret(changes []change) {
	// Masking rewrites maps in place, and the values are the caller's.
	patch := make(jsondiff.Patch, len(changes))
	for i, c := range changes {
		patch[i] = jsondiff.Operation{
			Type:     patchOp(c.typ),
			Path:     c.pointer,
			OldValue: jsonptr.Copy(c.live),
			Value:    jsonptr.Copy(c.git),
		}
	}
	patch = ssajsondiff.MaskSecretPatchData(patch)
	for i := range changes {
		changes[i].live, changes[i].git = patch[i].OldValue, patch[i].Value
	}
}

// patchOp is the JSON patch operation that turns live into Git.
func patchOp(t refluxv1.ChangeType) string {
	switch t {
	case refluxv1.ChangeAdd:
		return jsondiff.OperationRemove
	case refluxv1.ChangeRemove:
		return jsondiff.OperationAdd
	}
	return jsondiff.OperationReplace
}
