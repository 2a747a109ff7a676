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

	merge := split([]refluxv1.Drift{partial, whole}, true, writes{})[0]
	g.Expect(merge.fields).To(HaveLen(1))
	g.Expect(merge.fields[0].record.Name).To(Equal("configmap-small"))
	g.Expect(merge.refused).To(HaveLen(1))
	g.Expect(merge.refused[0].record.Name).To(Equal("configmap-big"))
	g.Expect(merge.refused[0].reason).To(ContainSubstring("9744 fields more than a record holds"))
}

// TestHelmFieldsAreWrittenOnlyThroughOneValuesKey: a field a chart
// rendered is written as its values key's change, so only a field one
// key of spec.values passes through unchanged is written.
func TestHelmFieldsAreWrittenOnlyThroughOneValuesKey(t *testing.T) {
	values := &refluxv1.FieldOrigin{File: "release/release.yaml", Line: 21, Column: 19, Kind: "values", ValuesKeys: []string{"replicaCount"}}
	for _, c := range []struct {
		name   string
		kind   string
		change refluxv1.ChangeType
		origin *refluxv1.FieldOrigin
		// addDefaults is the policy's spec.git.addChartDefaults.
		addDefaults bool
		says        string
	}{
		{name: "one key in spec.values", origin: values},
		{name: "a Secret", kind: "Secret", origin: values, says: "not written to the HelmRelease"},
		{name: "removed live", change: refluxv1.ChangeRemove, origin: values, says: "removing a values key"},
		{name: "key not found yet", says: "not found yet"},
		{name: "chart default", origin: &refluxv1.FieldOrigin{Kind: "chart-default", Refused: "chart-default",
			Why: "the chart's values.yaml sets probe.path; add it under spec.values", ValuesKeys: []string{"probe.path"}},
			says: "origin refused: chart-default: the chart's values.yaml sets probe.path; add it under spec.values (spec.git.addChartDefaults lets reflux add it)"},
		{name: "chart default, added when the policy says so", addDefaults: true, origin: &refluxv1.FieldOrigin{Kind: "chart-default",
			Refused: "chart-default", ValuesKeys: []string{"probe.path"}}},
		{name: "chart default of no single key", addDefaults: true, origin: &refluxv1.FieldOrigin{Kind: "chart-default",
			Refused: "chart-default", Why: "no key"}, says: "origin refused: chart-default"},
		{name: "a valuesFrom file's key", origin: &refluxv1.FieldOrigin{Kind: "values-from", File: "release/values.yaml", Line: 5, Column: 13,
			ValuesKeys: []string{"resources.requests.memory"}}},
		{name: "a valuesFrom file that does not parse", origin: &refluxv1.FieldOrigin{Kind: "values-from", Refused: "values-from",
			Why: "parsing values file release/values.yaml: yaml: line 2"}, says: "origin refused: values-from: parsing values file"},
		{name: "a post-renderer's patch", origin: &refluxv1.FieldOrigin{Kind: "post-renderer", File: "release/release.yaml", Line: 28},
			says: "a post-renderer's patch of the HelmRelease sets the field, at release/release.yaml:28"},
		{name: "template literal, whatever the policy", addDefaults: true, origin: &refluxv1.FieldOrigin{Kind: "template-literal",
			Refused: "template-literal", Why: "the chart hard-codes the value"}, says: "origin refused: template-literal"},
		{name: "computed", origin: &refluxv1.FieldOrigin{Kind: "computed", File: "release/release.yaml", Line: 3,
			ValuesKeys: []string{"image.repository", "image.tag"}}, says: "no single values key"},
		{name: "computed, one key differs live", origin: &refluxv1.FieldOrigin{Kind: "computed", File: "release/release.yaml", Line: 3,
			ValuesKeys: []string{"image.tag"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := refluxv1.Drift{}
			rec.Name = "helm"
			rec.Spec.Object = refluxv1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "app"}
			if c.kind != "" {
				rec.Spec.Object = refluxv1.ObjectRef{APIVersion: "v1", Kind: c.kind, Name: "app"}
			}
			rec.Spec.HelmRelease = &refluxv1.HelmReleaseRef{Namespace: "apps", Name: "app", Release: "apps/app.v1"}
			change := refluxv1.ChangeUpdate
			if c.change != "" {
				change = c.change
			}
			rec.Spec.Fields = []refluxv1.DriftField{{Pointer: "/spec/replicas", ChangeType: change, GitValue: "1", LiveValue: "3",
				Action: refluxv1.MergeAction, Origin: c.origin}}
			merge := split([]refluxv1.Drift{rec}, true, writes{encrypt: true, chartDefaults: c.addDefaults})[0]
			if c.says == "" {
				g.Expect(merge.refused).To(BeEmpty())
				g.Expect(merge.fields).To(HaveLen(1))
				return
			}
			g.Expect(merge.fields).To(BeEmpty())
			g.Expect(merge.refused).To(HaveLen(1))
			g.Expect(merge.refused[0].reason).To(ContainSubstring(c.says))
		})
	}
}
