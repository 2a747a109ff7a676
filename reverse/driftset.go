package reverse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"github.com/go-logr/logr"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// DriftSet is the open drift of one governed Kustomization, as handed to
// write-back whenever it changes.
type DriftSet struct {
	// Kustomization the records belong to.
	Kustomization refluxv1.KustomizationRef
	// Policy that governs the Kustomization.
	Policy *refluxv1.ReverseSyncPolicy
	// Revision Flux applied when the set was computed.
	Revision string
	// Records are the open (not Resolved or Dismissed) drift records.
	Records []refluxv1.Drift
	// Fingerprint identifies the set; see Fingerprint.
	Fingerprint string
}

// Handler receives drift sets. The drift engine calls it; the write-back
// engine implements it.
type Handler interface {
	HandleDriftSet(ctx context.Context, set DriftSet) error
}

// Fingerprint returns a short, stable identifier of what a set of records
// asks Git to change: each field's object, pointer, change, live value and
// action. It ignores timestamps, modifiers and record names, so the same
// drift seen again (after a restart, or by a new leader) yields the same
// fingerprint, and hence the same branch and no new commit.
func Fingerprint(records []refluxv1.Drift) string {
	var lines []string
	for _, r := range records {
		o := r.Spec.Object
		obj := strings.Join([]string{o.APIVersion, o.Kind, o.Namespace, o.Name}, "|")
		for _, f := range r.Spec.Fields {
			if f.Action == refluxv1.IgnoreAction {
				continue
			}
			lines = append(lines, strings.Join([]string{obj, f.Pointer, string(f.ChangeType), f.LiveValue, string(f.Action)}, "\x1f"))
		}
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\x1e")))
	return hex.EncodeToString(sum[:])[:12]
}

// LogHandler logs each drift set. It stands in for write-back where none is
// configured, and never writes anything.
type LogHandler struct {
	Log logr.Logger
}

var _ Handler = LogHandler{}

// HandleDriftSet implements Handler.
func (h LogHandler) HandleDriftSet(_ context.Context, set DriftSet) error {
	fields := 0
	for _, r := range set.Records {
		fields += len(r.Spec.Fields)
	}
	h.Log.Info("drift set changed",
		"kustomization", set.Kustomization.Namespace+"/"+set.Kustomization.Name,
		"revision", set.Revision, "records", len(set.Records), "fields", fields,
		"fingerprint", set.Fingerprint)
	return nil
}
