package release

import (
	"bytes"
	"fmt"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	ssajsondiff "github.com/fluxcd/pkg/ssa/jsondiff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// Exclusion says why helm-controller's drift detection leaves an object
// out: it reports the object as "excluded" and neither diffs nor corrects
// it. An upgrade applies it all the same.
type Exclusion string

const (
	// NotExcluded: helm-controller diffs the object.
	NotExcluded Exclusion = ""
	// ExcludedByChart: the rendered object carries
	// helm.toolkit.fluxcd.io/driftDetection: disabled.
	ExcludedByChart Exclusion = "Chart"
	// ExcludedByIgnoreRule: an ignore rule selecting the object names the
	// whole document (the path "").
	ExcludedByIgnoreRule Exclusion = "IgnoreRule"
	// ExcludedLive: the live object carries
	// helm.toolkit.fluxcd.io/driftDetection: disabled, and a writer other
	// than reflux set it: a person, or another controller.
	ExcludedLive Exclusion = "Live"
	// HeldByReflux: the live object carries
	// helm.toolkit.fluxcd.io/driftDetection: disabled only because reflux
	// wrote it (under field manager reflux) to hold the object. It is the
	// one exclusion reflux still diffs through: it must see what it holds.
	HeldByReflux Exclusion = "HeldByReflux"
)

// Diffed reports whether reflux diffs an object with this exclusion:
// when helm-controller does, and when only reflux's own hold excludes it.
func (e Exclusion) Diffed() bool {
	return e == NotExcluded || e == HeldByReflux
}

// Exclude decides whether helm-controller leaves desired out of drift
// detection, and why, in the order its diff checks (jsondiff.Unstructured
// in fluxcd/pkg/ssa): the rendered object's labels and annotations, an
// ignore rule for the whole object, then the live object's. Keys match
// exactly and values case-insensitively, as ssa/utils.AnyInMetadata
// matches them. live may be nil when the object does not exist.
//
// A live exclusion is HeldByReflux when every label and annotation that
// excludes the object is owned, in live's managedFields, by reflux's
// field manager alone; without that proof it is ExcludedLive.
func Exclude(desired, live *unstructured.Unstructured, ignorePaths []string) (Exclusion, error) {
	if excludes(desired.GetLabels()) || excludes(desired.GetAnnotations()) {
		return ExcludedByChart, nil
	}
	for _, p := range ignorePaths {
		if p == ssajsondiff.IgnorePathRoot {
			return ExcludedByIgnoreRule, nil
		}
	}
	if live == nil {
		return NotExcluded, nil
	}
	var places []fieldpath.Path
	if excludes(live.GetLabels()) {
		places = append(places, fieldpath.MakePathOrDie("metadata", "labels", helmv2.DriftDetectionMetadataKey))
	}
	if excludes(live.GetAnnotations()) {
		places = append(places, fieldpath.MakePathOrDie("metadata", "annotations", helmv2.DriftDetectionMetadataKey))
	}
	if len(places) == 0 {
		return NotExcluded, nil
	}
	for _, p := range places {
		only, err := ownedOnlyByReflux(live, p)
		if err != nil {
			return "", err
		}
		if !only {
			return ExcludedLive, nil
		}
	}
	return HeldByReflux, nil
}

// excludes reports whether labels or annotations carry helm-controller's
// exclusion (its ExclusionSelector, matched as AnyInMetadata does).
func excludes(meta map[string]string) bool {
	v := meta[helmv2.DriftDetectionMetadataKey]
	return v != "" && strings.EqualFold(v, helmv2.DriftDetectionDisabledValue)
}

// ownedOnlyByReflux reports whether live's managedFields give path to
// reflux's field manager and to no one else. A path no entry owns is not
// reflux's: the hold is proven by ownership, never assumed.
func ownedOnlyByReflux(live *unstructured.Unstructured, path fieldpath.Path) (bool, error) {
	owned := false
	for _, e := range live.GetManagedFields() {
		if e.FieldsV1 == nil || len(e.FieldsV1.Raw) == 0 {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return false, fmt.Errorf("parsing managedFields of %s (%s): %w", e.Manager, e.Operation, err)
		}
		if !set.Has(path) {
			continue
		}
		if e.Manager != refluxv1.FieldManager {
			return false, nil
		}
		owned = true
	}
	return owned, nil
}
