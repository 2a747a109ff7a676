package report

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

func TestDriftedCondition(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	noDrift := &metav1.Condition{Type: refluxv1.DriftedCondition, Status: metav1.ConditionFalse, Reason: refluxv1.NoDriftReason}
	open := refluxv1.Drift{}
	open.Spec.Fields = []refluxv1.DriftField{{Pointer: "/spec/replicas", Severity: refluxv1.SeverityLow, Action: refluxv1.AlertAction}}
	current := governor.Status{Current: true, Checked: true}
	pendingRecord := refluxv1.Drift{Status: refluxv1.DriftStatus{State: refluxv1.DriftPending}}
	pendingRecord.Spec.Written = []refluxv1.WrittenField{{Pointer: "/data/A", LiveValue: `"b"`}}
	// A refused watch says what it is and how to grant it
	// (controllers.WatchForbiddenError); the condition leads with it.
	widgetsDenied := errors.New(`reflux may not list widgets.example.com (kind Widget) in namespace team-a: grant get, list, watch ` +
		`and patch on it in a ClusterRole labelled rbac.reflux.dev/aggregate-to-workloads: "true"`)
	secretsDenied := errors.New("reflux may not watch secrets (kind Secret): reading Secrets is opt-in, include config/components/secrets")
	tests := []struct {
		name string
		in   DriftedInput
		// want is "" to keep the previous condition, else status/reason.
		want     string
		contains string
	}{
		{name: "clean", in: DriftedInput{Engine: current}, want: "False/NoDrift", contains: "no drift from revision main@sha1:1"},
		{name: "drifted", in: DriftedInput{Engine: current, Open: []refluxv1.Drift{open}}, want: "True/DriftDetected",
			contains: "1 field(s) in 1 object(s) drifted: 1 low; 1 Alert"},
		{name: "drifted, and a change pending", in: DriftedInput{Engine: current, Open: []refluxv1.Drift{open, pendingRecord}},
			want:     "True/DriftDetected",
			contains: "1 field(s) in 1 object(s) drifted: 1 low; 1 Alert; 1 live change(s) recorded as pending, evaluated when the render lands"},
		{name: "only a pending change", in: DriftedInput{Engine: current, Open: []refluxv1.Drift{pendingRecord}},
			want: "True/DriftDetected", contains: "1 live change(s) recorded as pending"},
		{name: "first render still running", in: DriftedInput{Render: desired.State{Building: true, Since: now.Add(-time.Second)}},
			want: "Unknown/Progressing", contains: "rendering revision main@sha1:1 (1s so far)"},
		{name: "a short render of a new revision keeps the last word", in: DriftedInput{Previous: noDrift,
			Render: desired.State{Building: true, Since: now.Add(-time.Second)}}, want: ""},
		{name: "a remote Kustomization become local is not called remote while its first render runs", in: DriftedInput{
			Previous: &metav1.Condition{Type: refluxv1.DriftedCondition, Status: metav1.ConditionUnknown, Reason: refluxv1.RemoteClusterUnsupportedReason},
			Render:   desired.State{Building: true, Since: now.Add(-time.Second)}},
			want: "Unknown/Progressing", contains: "rendering revision main@sha1:1 (1s so far)"},
		{name: "nor is a refused one, allowed again", in: DriftedInput{
			Previous: &metav1.Condition{Type: refluxv1.DriftedCondition, Status: metav1.ConditionUnknown, Reason: "AccessDenied"},
			Engine:   governor.Status{RollingOut: true}},
			want: "Unknown/Progressing", contains: "Flux is applying a revision reflux has not rendered"},
		{name: "a slow render says so", in: DriftedInput{Previous: noDrift, Render: desired.State{Building: true, Since: now.Add(-42 * time.Second)},
			Engine: governor.Status{Parked: 3, Held: 2}}, want: "Unknown/Progressing",
			contains: "rendering revision main@sha1:1 (42s so far); 3 live change(s) kept until it is current, 2 of them held"},
		{name: "skipped revisions are said", in: DriftedInput{Engine: governor.Status{RollingOut: true, Parked: 1, Held: 1},
			Render: desired.State{Building: true, Since: now.Add(-time.Minute), Skipped: 2}}, want: "Unknown/Progressing",
			contains: "(1m0s so far); 2 revision(s) came while it built and were skipped for the newest; 1 live change(s) kept"},
		{name: "a change kept during a short render is reported", in: DriftedInput{Previous: noDrift,
			Render: desired.State{Building: true, Since: now.Add(-time.Second)}, Engine: governor.Status{Parked: 1, Held: 1}},
			want: "Unknown/Progressing", contains: "1 live change(s) kept"},
		{name: "Flux rolling out", in: DriftedInput{Engine: governor.Status{RollingOut: true, Parked: 1, Held: 1},
			Render: desired.State{Err: fmt.Errorf("%w: applied main@sha1:1, source serves main@sha1:2", desired.ErrRevisionUnavailable)}},
			want: "Unknown/Progressing", contains: "Flux is applying a revision reflux has not rendered"},
		{name: "render failed", in: DriftedInput{Render: desired.State{Err: errors.New("kustomize build failed: boom")}},
			want: "Unknown/RenderFailed", contains: "rendering revision main@sha1:1: kustomize build failed: boom; live changes are kept until it is current"},
		{name: "render past its time budget", in: DriftedInput{Render: desired.State{
			Err: fmt.Errorf("building ./apps at main@sha1:1: %w: kustomize build ran past 10m0s and was abandoned", desired.ErrRenderBudget)}},
			want: "Unknown/RenderFailed", contains: "render time budget exceeded: kustomize build ran past 10m0s and was abandoned; live changes are kept"},
		{name: "tree over its size budget", in: DriftedInput{Render: desired.State{
			Err: fmt.Errorf("building ./apps at main@sha1:1: kustomize build refused: big.yaml: %w: 100.0 MiB", kustomize.ErrFileTooLarge)}},
			want: "Unknown/RenderFailed", contains: "big.yaml: file over the size budget: 100.0 MiB"},
		{name: "artifact gone", in: DriftedInput{Render: desired.State{Err: fmt.Errorf("%w: artifact not found", desired.ErrRevisionUnavailable)}},
			want: "Unknown/ArtifactUnavailable"},
		{name: "first check running", in: DriftedInput{Engine: governor.Status{Current: true, Unchecked: 40}},
			want: "Unknown/Progressing", contains: "checking 40 live object(s) against revision main@sha1:1"},
		{name: "a later check keeps NoDrift", in: DriftedInput{Engine: governor.Status{Current: true, Unchecked: 40}, Previous: noDrift}, want: ""},
		{name: "a permission the tenant lacks beats everything else", in: DriftedInput{Engine: governor.Status{Current: true, Checked: true,
			Denied: []governor.Denial{{Object: "ConfigMap/team-b/shared", Err: &tenancy.ForbiddenError{User: "system:serviceaccount:team-a:tenant",
				Verb: "patch", Resource: "configmaps", Namespace: "team-b"}}, {Object: "Secret/team-b/token", Err: &tenancy.ForbiddenError{}}}},
			Open: []refluxv1.Drift{open}}, want: "Unknown/ImpersonationForbidden",
			contains: `system:serviceaccount:team-a:tenant cannot patch resource "configmaps" in API group "" in the namespace "team-b" ` +
				`(ConfigMap/team-b/shared, and 1 more object(s)); 2 live change(s) kept without a hold until the permission is granted`},
		{name: "reflux acting as itself, refused the dry run of a kind it may watch", in: DriftedInput{Engine: governor.Status{Current: true, Checked: true,
			Denied: []governor.Denial{{Object: "Widget/team-a/gadget", Err: &tenancy.ForbiddenError{User: "system:serviceaccount:reflux-system:reflux-controller",
				Verb: "patch", Resource: "widgets", Group: "example.com", Namespace: "team-a", Self: true}}}}},
			want: "Unknown/ActionForbidden",
			contains: `system:serviceaccount:reflux-system:reflux-controller cannot patch resource "widgets" in API group "example.com" in the namespace "team-a" ` +
				`(Widget/team-a/gadget); 1 live change(s) kept without a hold until the permission is granted ` +
				`(to reflux, in a ClusterRole labelled rbac.reflux.dev/aggregate-to-workloads: "true")`},
		{name: "a kind reflux may not watch is reported over its other kinds' drift", in: DriftedInput{Engine: current,
			Open: []refluxv1.Drift{open}, WatchDenied: []error{widgetsDenied, secretsDenied}},
			want: "Unknown/WatchForbidden",
			contains: `reflux may not list widgets.example.com (kind Widget) in namespace team-a: grant get, list, watch and patch ` +
				`on it in a ClusterRole labelled rbac.reflux.dev/aggregate-to-workloads: "true" (and 1 more refused watch(es)); ` +
				`the other kinds are watched: 1 field(s) in 1 object(s) drifted`},
		{name: "the tenant's missing permission comes first", in: DriftedInput{Engine: governor.Status{Current: true, Checked: true,
			Denied: []governor.Denial{{Object: "ConfigMap/team-b/shared", Err: &tenancy.ForbiddenError{}}}},
			WatchDenied: []error{widgetsDenied}}, want: "Unknown/ImpersonationForbidden"},
		{name: "records are news whether or not the check is done", in: DriftedInput{Engine: governor.Status{Current: true, Unchecked: 40},
			Previous: noDrift, Open: []refluxv1.Drift{open}}, want: "True/DriftDetected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := tt.in
			in.Applied, in.SlowRender, in.Now = "main@sha1:1", 10*time.Second, now
			c := Drifted(in)
			if tt.want == "" {
				g.Expect(c).To(BeNil())
				return
			}
			g.Expect(c).NotTo(BeNil())
			g.Expect(string(c.Status) + "/" + c.Reason).To(Equal(tt.want))
			g.Expect(c.Message).To(ContainSubstring(tt.contains))
		})
	}
}
