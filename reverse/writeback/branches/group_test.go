package branches

import (
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestSplitRefusesARecordThatOmitsFields: a record holding only part of a
// live change (record.MaxFields) is not written back, field by field,
// with the reason; another record's fields still are.
func TestSplitRefusesARecordThatOmitsFields(t *testing.T) {
	g := NewWithT(t)
	field := refluxv1.DriftField{Pointer: "/data/A", ChangeType: refluxv1.ChangeAdd, LiveValue: `"1"`, Action: refluxv1.MergeAction}
	partial := refluxv1.Drift{}
	partial.Name = "configmap-big"
	partial.Spec.Object = refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "big"}
	partial.Spec.Fields = []refluxv1.DriftField{field}
	partial.Spec.OmittedFields = 9_744
	whole := partial
	whole.Name, whole.Spec.Object.Name, whole.Spec.OmittedFields = "configmap-small", "small", 0

	merge := split([]refluxv1.Drift{partial, whole}, true, false)[0]
	g.Expect(merge.fields).To(HaveLen(1))
	g.Expect(merge.fields[0].record.Name).To(Equal("configmap-small"))
	g.Expect(merge.refused).To(HaveLen(1))
	g.Expect(merge.refused[0].record.Name).To(Equal("configmap-big"))
	g.Expect(merge.refused[0].reason).To(ContainSubstring("9744 fields more than a record holds"))
}
