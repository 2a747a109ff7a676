package release

import (
	"strings"

	ssajsondiff "github.com/fluxcd/pkg/ssa/jsondiff"
	"github.com/wI2L/jsondiff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// isSecret reports whether obj is a core Secret, whose values never
// leave the cluster.
func isSecret(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// maskSecret masks a Secret's data and stringData values in a copy of
// patch with fluxcd/pkg/ssa's own MaskSecretPatchData, which helm-controller
// applies before it logs a Secret's patch: "***", or "*** (before)" and
// "*** (after)" for a changed value. Which keys changed is kept.
//
// MaskSecretPatchData leaves the target's value of a key that a whole-map
// operation does not change (ssa v0.76: maskMap masks only the source
// side), and a rationalised patch replaces all of /data when most keys
// change; so every value it leaves under data or stringData is masked
// after it, whatever the operation's path.
func maskSecret(patch jsondiff.Patch) jsondiff.Patch {
	out := make(jsondiff.Patch, len(patch))
	for i, op := range patch {
		op.Value, op.OldValue = jsonptr.Copy(op.Value), jsonptr.Copy(op.OldValue)
		out[i] = op
	}
	out = ssajsondiff.MaskSecretPatchData(out)
	for i := range out {
		op := &out[i]
		op.Value, op.OldValue = maskRest(op.Path, op.Value), maskRest(op.Path, op.OldValue)
	}
	return out
}

// masks are the values MaskSecretPatchData writes.
var masks = map[any]bool{"***": true, "*** (before)": true, "*** (after)": true}

// maskRest masks what is left of Secret data in v, the value at path.
func maskRest(path string, v any) any {
	switch {
	case v == nil:
		return nil
	case path == "":
		if m, ok := v.(map[string]any); ok {
			for _, k := range []string{"data", "stringData"} {
				if d, ok := m[k]; ok {
					m[k] = maskRest("/"+k, d)
				}
			}
		}
		return v
	case path == "/data" || path == "/stringData":
		if m, ok := v.(map[string]any); ok {
			for k, e := range m {
				m[k] = maskRest(path+"/"+k, e)
			}
			return m
		}
		return "***"
	case strings.HasPrefix(path, "/data/") || strings.HasPrefix(path, "/stringData/"):
		if masks[v] {
			return v
		}
		return "***"
	}
	return v
}
