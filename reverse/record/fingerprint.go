package record

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// Fingerprint identifies what one record says diverges: every field's
// object, pointer, change, live value and action, Ignore fields and a
// manual hotfix's included. It is the record's status.fingerprint; a
// record with no fields has none ("").
func Fingerprint(d *refluxv1.Drift) string {
	return FingerprintOf([]refluxv1.Drift{*d}, func(refluxv1.DriftField) bool { return true })
}

// FingerprintOf returns a short, stable identifier of the fields of
// records that keep selects, or "" when it selects none: a hash of
// nothing would name every empty set alike (e3b0c44298fc, SHA-256 of
// empty input). It ignores timestamps, modifiers and record names, so the
// same drift seen again (after a restart, or by a new leader) yields the
// same fingerprint.
func FingerprintOf(records []refluxv1.Drift, keep func(refluxv1.DriftField) bool) string {
	var lines []string
	for _, r := range records {
		o := r.Spec.Object
		obj := strings.Join([]string{o.APIVersion, o.Kind, o.Namespace, o.Name}, "|")
		for _, f := range r.Spec.Fields {
			if !keep(f) {
				continue
			}
			lines = append(lines, strings.Join([]string{obj, f.Pointer, string(f.ChangeType), f.LiveValue, string(f.Action)}, "\x1f"))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\x1e")))
	return hex.EncodeToString(sum[:])[:12]
}
