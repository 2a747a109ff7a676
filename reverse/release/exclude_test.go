package release

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const key = "helm.toolkit.fluxcd.io/driftDetection"

// The managedFields sets of an annotation and a label with the key.
const (
	annotationSet = `{"f:metadata":{"f:annotations":{"f:helm.toolkit.fluxcd.io/driftDetection":{}}}}`
	labelSet      = `{"f:metadata":{"f:labels":{"f:helm.toolkit.fluxcd.io/driftDetection":{}}}}`
	dataSet       = `{"f:data":{"f:greeting":{}}}`
)

func TestExclude(t *testing.T) {
	const update, apply = metav1.ManagedFieldsOperationUpdate, metav1.ManagedFieldsOperationApply
	cm := func(labels, annotations map[string]string) *unstructured.Unstructured {
		u := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  greeting: hi\n")
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
		return u
	}
	disabled := map[string]string{key: "disabled"}
	helm := owned("helm-controller", apply, 1, dataSet)
	tests := []struct {
		name    string
		desired *unstructured.Unstructured
		live    *unstructured.Unstructured
		ignore  []string
		want    Exclusion
	}{
		{name: "nothing excludes it", desired: cm(nil, nil), live: withManaged(cm(nil, nil), helm), want: NotExcluded},
		{name: "no live object", desired: cm(nil, nil), want: NotExcluded},
		{name: "the chart's annotation", desired: cm(nil, disabled), live: withManaged(cm(nil, disabled), helm), want: ExcludedByChart},
		{name: "the chart's label, any case", desired: cm(map[string]string{key: "Disabled"}, nil), want: ExcludedByChart},
		{name: "another value does not exclude", desired: cm(nil, map[string]string{key: "enabled"}),
			live: withManaged(cm(nil, map[string]string{key: "enabled"}), owned("reflux", update, 2, annotationSet)), want: NotExcluded},
		{name: "an ignore rule for the whole object", desired: cm(nil, nil), ignore: []string{"/data", ""}, want: ExcludedByIgnoreRule},
		{name: "an ignore rule for a path does not exclude", desired: cm(nil, nil), ignore: []string{"/data"},
			live: withManaged(cm(nil, nil), helm), want: NotExcluded},
		{name: "reflux's live annotation holds it",
			desired: cm(nil, nil), live: withManaged(cm(nil, disabled), helm, owned("reflux", update, 2, annotationSet)), want: HeldByReflux},
		{name: "reflux's live label, applied, holds it",
			desired: cm(nil, nil), live: withManaged(cm(disabled, nil), helm, owned("reflux", apply, 2, labelSet)), want: HeldByReflux},
		{name: "a person's live annotation excludes it",
			desired: cm(nil, nil), live: withManaged(cm(nil, disabled), helm, owned("kubectl-edit", update, 2, annotationSet)), want: ExcludedLive},
		{name: "an annotation reflux shares with a person is the person's too",
			desired: cm(nil, nil), want: ExcludedLive, live: withManaged(cm(nil, disabled), helm,
				owned("reflux", update, 2, annotationSet), owned("kubectl-edit", update, 3, annotationSet))},
		{name: "reflux's annotation beside a person's label",
			desired: cm(nil, nil), want: ExcludedLive, live: withManaged(cm(disabled, disabled), helm,
				owned("reflux", update, 2, annotationSet), owned("kubectl-edit", update, 3, labelSet))},
		{name: "a key no entry owns is not proven reflux's",
			desired: cm(nil, nil), live: withManaged(cm(nil, disabled), helm), want: ExcludedLive},
		{name: "the chart's exclusion comes first",
			desired: cm(nil, disabled), live: withManaged(cm(nil, disabled), owned("reflux", update, 2, annotationSet)), want: ExcludedByChart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Exclude(tt.desired, tt.live, tt.ignore)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(got.Diffed()).To(Equal(tt.want == NotExcluded || tt.want == HeldByReflux))
		})
	}
}

func TestExcludeRejectsBrokenManagedFields(t *testing.T) {
	g := NewWithT(t)
	live := withManaged(obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    "+key+": disabled\n"),
		owned("reflux", metav1.ManagedFieldsOperationUpdate, 1, `{"bogus:metadata":{}}`))
	_, err := Exclude(obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"), live, nil)
	g.Expect(err).To(MatchError(ContainSubstring("managedFields of reflux")))
}
