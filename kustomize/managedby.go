package kustomize

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/provenance"
)

// PairedFluxVersion is the kustomize-controller reflux is built and
// tested against: the version of its API module in go.mod, and of the
// controller hack/testbin builds (TestPairedFluxVersion checks both).
const PairedFluxVersion = "v1.9.6"

// restampManagedBy gives objects the managed-by label kustomize-controller
// version flux stamps where krusty stamped this program's own: krusty
// reads the version from whichever binary runs it (its build info), so
// kustomize-controller writes "kustomize-v1.9.6" where reflux, or a test
// binary, would write something else. Only the exact value krusty wrote
// is replaced.
func restampManagedBy(objs []*unstructured.Unstructured, flux string) {
	ours := "kustomize-" + provenance.GetProvenance().Semver()
	theirs := "kustomize-" + flux
	if ours == theirs {
		return
	}
	for _, o := range objs {
		labels := o.GetLabels()
		if labels[konfig.ManagedbyLabelKey] != ours {
			continue
		}
		labels[konfig.ManagedbyLabelKey] = theirs
		o.SetLabels(labels)
	}
}
