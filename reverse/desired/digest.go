package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/reflux-dev/reflux/kustomize"
)

// SubstitutionsDigest summarises substitution data, so a changed variable
// re-renders even at the same revision.
func SubstitutionsDigest(sources []kustomize.SubstituteSource) string {
	h := sha256.New()
	for _, s := range sources {
		h.Write([]byte(s.Kind + "\x00" + s.Name + "\x00"))
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			h.Write([]byte(k + "\x00" + s.Data[k] + "\x00"))
		}
		h.Write([]byte{0xff})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
