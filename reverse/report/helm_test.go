package report

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

func TestHelmDriftedCondition(t *testing.T) {
	open := refluxv1.Drift{}
	open.Spec.Fields = []refluxv1.DriftField{{Pointer: "/spec/replicas", Severity: refluxv1.SeverityHigh, Action: refluxv1.MergeAction}}
	forbidden := &tenancy.ForbiddenError{User: "system:serviceaccount:apps:tenant", Verb: "patch", Resource: "deployments",
		Group: "apps", Namespace: "shared"}
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
		{name: "drifted, and helm-controller has no chart artifact", in: HelmDriftedInput{Release: "apps/web.v2", Open: []refluxv1.Drift{open},
			ArtifactErr: errors.New("helm-controller has no chart artifact to upgrade from (SourceNotReady: HelmChart 'apps/apps-web' is not ready)")},
			want: "True/ArtifactUnavailable",
			message: "1 field(s) in 1 object(s) drifted: 1 high; 1 Merge; helm-controller has no chart artifact to upgrade from " +
				"(SourceNotReady: HelmChart 'apps/apps-web' is not ready); compared with release apps/web.v2, whose chart Helm's storage keeps, " +
				"the hold stays and the changes are kept"},
		{name: "drifted, and helm-controller cannot compose the values", in: HelmDriftedInput{Release: "apps/web.v2", Open: []refluxv1.Drift{open},
			ValuesErr: errors.New("helm-controller cannot compose the values (ValuesError: bad YAML)")},
			want: "True/ValuesInvalid",
			message: "1 field(s) in 1 object(s) drifted: 1 high; 1 Merge; helm-controller cannot compose the values (ValuesError: bad YAML); " +
				"compared with release apps/web.v2, the hold stays and the changes are kept until the values are fixed"},
		{name: "a chart that does not render here comes before what stops an upgrade", in: HelmDriftedInput{Release: "apps/web.v2",
			Open: []refluxv1.Drift{open}, ChartErr: lookup, ValuesErr: errors.New("bad values"), ArtifactErr: errors.New("no artifact")},
			want:    "True/ChartRenderFailed",
			message: "1 field(s) in 1 object(s) drifted: 1 high; 1 Merge; no values key is found for them: " + lookup.Error()},
		{name: "values before the artifact", in: HelmDriftedInput{Release: "apps/web.v2", Open: []refluxv1.Drift{open},
			ValuesErr: errors.New("bad values"), ArtifactErr: errors.New("no artifact")},
			want: "True/ValuesInvalid",
			message: "1 field(s) in 1 object(s) drifted: 1 high; 1 Merge; bad values; " +
				"compared with release apps/web.v2, the hold stays and the changes are kept until the values are fixed"},
		{name: "bad input without drift is no drift", in: HelmDriftedInput{Release: "apps/web.v2",
			ValuesErr: errors.New("bad values"), ArtifactErr: errors.New("no artifact")},
			want: "False/NoDrift", message: "no drift from release apps/web.v2"},
		{name: "a chart failure without drift is no drift", in: HelmDriftedInput{Release: "apps/web.v2", ChartErr: lookup},
			want: "False/NoDrift", message: "no drift from release apps/web.v2"},
		{name: "a release in a remote cluster reflux cannot govern", in: HelmDriftedInput{Release: "apps/web.v2",
			Ungoverned: errors.New("unsupported spec.kubeConfig: spec.kubeConfig names neither a Secret nor a ConfigMap"),
			ReleaseErr: errors.New(`secrets "sh.helm.release.v1.web.v2" not found`)}, want: "Unknown/RemoteCluster",
			message: "unsupported spec.kubeConfig: spec.kubeConfig names neither a Secret nor a ConfigMap: live changes of its objects are not seen"},
		{name: "a remote cluster that does not answer, over open drift", in: HelmDriftedInput{Release: "apps/web.v2", Open: []refluxv1.Drift{open},
			Unreachable: errors.New("the remote cluster of Secret/prod-kubeconfig does not answer since 2026-12-07T00:00:00Z: EOF")},
			want: "Unknown/ClusterUnreachable", message: "the remote cluster of Secret/prod-kubeconfig does not answer since 2026-12-07T00:00:00Z: EOF"},
		{name: "the release cannot be read", in: HelmDriftedInput{Release: "apps/web.v2", Open: []refluxv1.Drift{open},
			ReleaseErr: errors.New(`secrets "sh.helm.release.v1.web.v2" not found`)}, want: "Unknown/ReleaseUnreadable",
			message: `reading release apps/web.v2: secrets "sh.helm.release.v1.web.v2" not found; live changes of its objects are kept and compared once it can be read`},
		{name: "what the ServiceAccount may not do comes first", in: HelmDriftedInput{Release: "apps/web.v2", Open: []refluxv1.Drift{open},
			ChartErr: lookup, Denied: map[string]*tenancy.ForbiddenError{"Deployment/shared/web": forbidden, "Service/shared/web": forbidden}},
			want: "True/ImpersonationForbidden",
			message: `system:serviceaccount:apps:tenant cannot patch resource "deployments" in API group "apps" in the namespace "shared" ` +
				`(Deployment/shared/web, and 1 more object(s)); 2 live change(s) kept without a hold until the permission is granted`},
		{name: "denied, and no other drift", in: HelmDriftedInput{Release: "apps/web.v2",
			Denied: map[string]*tenancy.ForbiddenError{"Deployment/shared/web": forbidden}}, want: "Unknown/ImpersonationForbidden",
			message: `system:serviceaccount:apps:tenant cannot patch resource "deployments" in API group "apps" in the namespace "shared" ` +
				`(Deployment/shared/web); 1 live change(s) kept without a hold until the permission is granted`},
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

func TestHelmSyncedCondition(t *testing.T) {
	synced := func(status metav1.ConditionStatus, reason, message string) refluxv1.Drift {
		d := refluxv1.Drift{}
		d.Status.Conditions = []metav1.Condition{{Type: refluxv1.ReverseSyncedCondition, Status: status, Reason: reason, Message: message}}
		return d
	}
	pushed := synced(metav1.ConditionTrue, refluxv1.BranchPushedReason, "branch reflux/a carries the change at 0123456789ab, pull request http://forge/1")
	other := synced(metav1.ConditionTrue, refluxv1.BranchPushedReason, "branch reflux/b carries the change at ba9876543210")
	refused := synced(metav1.ConditionFalse, refluxv1.RefusedReason, "the values key replicaCount is set by valuesFrom")
	tests := []struct {
		name string
		open []refluxv1.Drift
		// want is "" for no condition, else status/reason.
		want, message string
	}{
		{name: "no open records", want: ""},
		{name: "not written back yet", open: []refluxv1.Drift{{}}, want: ""},
		{name: "one branch", open: []refluxv1.Drift{pushed, pushed}, want: "True/BranchPushed",
			message: "BranchPushed: branch reflux/a carries the change at 0123456789ab, pull request http://forge/1"},
		{name: "two branches, in a stable order", open: []refluxv1.Drift{other, {}, pushed}, want: "True/BranchPushed",
			message: "BranchPushed: branch reflux/a carries the change at 0123456789ab, pull request http://forge/1; " +
				"BranchPushed: branch reflux/b carries the change at ba9876543210"},
		{name: "a refusal comes first and decides", open: []refluxv1.Drift{pushed, refused}, want: "False/Refused",
			message: "Refused: the values key replicaCount is set by valuesFrom; " +
				"BranchPushed: branch reflux/a carries the change at 0123456789ab, pull request http://forge/1"},
		{name: "bounded", open: []refluxv1.Drift{
			synced(metav1.ConditionTrue, "BranchPushed", "1"), synced(metav1.ConditionTrue, "BranchPushed", "2"),
			synced(metav1.ConditionTrue, "BranchPushed", "3"), synced(metav1.ConditionTrue, "BranchPushed", "4"),
			synced(metav1.ConditionTrue, "BranchPushed", "5"), synced(metav1.ConditionTrue, "BranchPushed", "6")},
			want: "True/BranchPushed", message: "BranchPushed: 1; BranchPushed: 2; BranchPushed: 3; BranchPushed: 4; and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := HelmSynced(tt.open)
			if tt.want == "" {
				g.Expect(c).To(BeNil())
				return
			}
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Type).To(Equal(refluxv1.ReverseSyncedCondition))
			g.Expect(string(c.Status) + "/" + c.Reason).To(Equal(tt.want))
			g.Expect(c.Message).To(Equal(tt.message))
		})
	}
}
