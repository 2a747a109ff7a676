package report

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func TestHelmDriftedCondition(t *testing.T) {
	open := refluxv1.Drift{}
	open.Spec.Fields = []refluxv1.DriftField{{Pointer: "/spec/replicas", Severity: refluxv1.SeverityHigh, Action: refluxv1.MergeAction}}
	lookup := errors.New(`template: app/templates/deployment.yaml:9:14: executing "app/templates/deployment.yaml" at <required>: error calling required: the namespace must exist`)
	tests := []struct {
		name string
		in   HelmDriftedInput
		// want is "" for no condition, else status/reason.
		want, message string
	}{
		{name: "no release yet", in: HelmDriftedInput{}, want: ""},
		{name: "clean", in: HelmDriftedInput{Release: "apps/web.v2"}, want: "False/NoDrift", message: "no drift from release apps/web.v2"},
		{name: "drifted", in: HelmDriftedInput{Release: "apps/web.v2", Open: []refluxv1.Drift{open}}, want: "True/DriftDetected",
			message: "1 field(s) in 1 object(s) drifted: 1 high; 1 Merge"},
		{name: "drifted, and the chart does not render here", in: HelmDriftedInput{Release: "apps/web.v2", Open: []refluxv1.Drift{open}, ChartErr: lookup},
			want:    "True/ChartRenderFailed",
			message: "1 field(s) in 1 object(s) drifted: 1 high; 1 Merge; no values key is found for them: " + lookup.Error()},
		{name: "a chart failure without drift is no drift", in: HelmDriftedInput{Release: "apps/web.v2", ChartErr: lookup},
			want: "False/NoDrift", message: "no drift from release apps/web.v2"},
		{name: "the release cannot be read", in: HelmDriftedInput{Release: "apps/web.v2", Open: []refluxv1.Drift{open},
			ReleaseErr: errors.New(`secrets "sh.helm.release.v1.web.v2" not found`)}, want: "Unknown/ReleaseUnreadable",
			message: `reading release apps/web.v2: secrets "sh.helm.release.v1.web.v2" not found; live changes of its objects are kept and compared once it can be read`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := HelmDrifted(tt.in)
			if tt.want == "" {
				g.Expect(c).To(BeNil())
				return
			}
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Type).To(Equal(refluxv1.ReverseDriftedCondition))
			g.Expect(string(c.Status) + "/" + c.Reason).To(Equal(tt.want))
			g.Expect(c.Message).To(Equal(tt.message))
		})
	}
}
