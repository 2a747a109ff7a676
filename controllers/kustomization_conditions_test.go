package controllers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
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
	widgetsDenied := &WatchForbiddenError{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		Resource: schema.GroupResource{Group: "example.com", Resource: "widgets"}, Namespace: "team-a", Verb: "list"}
	secretsDenied := &WatchForbiddenError{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"},
		Resource: schema.GroupResource{Resource: "secrets"}, Verb: "watch"}
	tests := []struct {
		name string
		in   driftedInput
		// want is "" to keep the previous condition, else status/reason.
		want     string
		contains string
	}{
		{name: "clean", in: driftedInput{Engine: current}, want: "False/NoDrift", contains: "no drift from revision main@sha1:1"},
		{name: "drifted", in: driftedInput{Engine: current, Open: []refluxv1.Drift{open}}, want: "True/DriftDetected",
			contains: "1 field(s) in 1 object(s) drifted: 1 low; 1 Alert"},
		{name: "first render still running", in: driftedInput{Render: desired.State{Building: true, Since: now.Add(-time.Second)}},
			want: "Unknown/Progressing", contains: "rendering revision main@sha1:1 (1s so far)"},
		{name: "a short render of a new revision keeps the last word", in: driftedInput{Previous: noDrift,
			Render: desired.State{Building: true, Since: now.Add(-time.Second)}}, want: ""},
		{name: "a slow render says so", in: driftedInput{Previous: noDrift, Render: desired.State{Building: true, Since: now.Add(-42 * time.Second)},
			Engine: governor.Status{Parked: 3, Held: 2}}, want: "Unknown/Progressing",
			contains: "rendering revision main@sha1:1 (42s so far); 3 live change(s) kept until it is current, 2 of them held"},
		{name: "a change kept during a short render is reported", in: driftedInput{Previous: noDrift,
			Render: desired.State{Building: true, Since: now.Add(-time.Second)}, Engine: governor.Status{Parked: 1, Held: 1}},
			want: "Unknown/Progressing", contains: "1 live change(s) kept"},
		{name: "Flux rolling out", in: driftedInput{Engine: governor.Status{RollingOut: true, Parked: 1, Held: 1},
			Render: desired.State{Err: fmt.Errorf("%w: applied main@sha1:1, source serves main@sha1:2", desired.ErrRevisionUnavailable)}},
			want: "Unknown/Progressing", contains: "Flux is applying a revision reflux has not rendered"},
		{name: "render failed", in: driftedInput{Render: desired.State{Err: errors.New("kustomize build failed: boom")}},
			want: "Unknown/RenderFailed", contains: "rendering revision main@sha1:1: kustomize build failed: boom; live changes are kept until it is current"},
		{name: "artifact gone", in: driftedInput{Render: desired.State{Err: fmt.Errorf("%w: artifact not found", desired.ErrRevisionUnavailable)}},
			want: "Unknown/ArtifactUnavailable"},
		{name: "first check running", in: driftedInput{Engine: governor.Status{Current: true, Unchecked: 40}},
			want: "Unknown/Progressing", contains: "checking 40 live object(s) against revision main@sha1:1"},
		{name: "a later check keeps NoDrift", in: driftedInput{Engine: governor.Status{Current: true, Unchecked: 40}, Previous: noDrift}, want: ""},
		{name: "a permission the tenant lacks beats everything else", in: driftedInput{Engine: governor.Status{Current: true, Checked: true,
			Denied: []governor.Denial{{Object: "ConfigMap/team-b/shared", Err: &tenancy.ForbiddenError{User: "system:serviceaccount:team-a:tenant",
				Verb: "patch", Resource: "configmaps", Namespace: "team-b"}}, {Object: "Secret/team-b/token", Err: &tenancy.ForbiddenError{}}}},
			Open: []refluxv1.Drift{open}}, want: "Unknown/ImpersonationForbidden",
			contains: `system:serviceaccount:team-a:tenant cannot patch resource "configmaps" in API group "" in the namespace "team-b" ` +
				`(ConfigMap/team-b/shared, and 1 more object(s)); 2 live change(s) kept without a hold until the permission is granted`},
		{name: "reflux acting as itself, refused the dry run of a kind it may watch", in: driftedInput{Engine: governor.Status{Current: true, Checked: true,
			Denied: []governor.Denial{{Object: "Widget/team-a/gadget", Err: &tenancy.ForbiddenError{User: "system:serviceaccount:reflux-system:reflux-controller",
				Verb: "patch", Resource: "widgets", Group: "example.com", Namespace: "team-a", Self: true}}}}},
			want: "Unknown/ActionForbidden",
			contains: `system:serviceaccount:reflux-system:reflux-controller cannot patch resource "widgets" in API group "example.com" in the namespace "team-a" ` +
				`(Widget/team-a/gadget); 1 live change(s) kept without a hold until the permission is granted ` +
				`(to reflux, in a ClusterRole labelled rbac.reflux.dev/aggregate-to-workloads: "true")`},
		{name: "a kind reflux may not watch is reported over its other kinds' drift", in: driftedInput{Engine: current,
			Open: []refluxv1.Drift{open}, WatchDenied: []*WatchForbiddenError{widgetsDenied, secretsDenied}},
			want: "Unknown/WatchForbidden",
			contains: `reflux may not list widgets.example.com (kind Widget) in namespace team-a: grant get, list, watch and patch ` +
				`on it in a ClusterRole labelled rbac.reflux.dev/aggregate-to-workloads: "true" (and 1 more refused watch(es)); ` +
				`the other kinds are watched: 1 field(s) in 1 object(s) drifted`},
		{name: "the tenant's missing permission comes first", in: driftedInput{Engine: governor.Status{Current: true, Checked: true,
			Denied: []governor.Denial{{Object: "ConfigMap/team-b/shared", Err: &tenancy.ForbiddenError{}}}},
			WatchDenied: []*WatchForbiddenError{widgetsDenied}}, want: "Unknown/ImpersonationForbidden"},
		{name: "records are news whether or not the check is done", in: driftedInput{Engine: governor.Status{Current: true, Unchecked: 40},
			Previous: noDrift, Open: []refluxv1.Drift{open}}, want: "True/DriftDetected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := tt.in
			in.Applied, in.SlowRender, in.Now = "main@sha1:1", 10*time.Second, now
			c := driftedCondition(in)
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

func TestWatchForbiddenErrorSaysTheFix(t *testing.T) {
	g := NewWithT(t)
	secrets := &WatchForbiddenError{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"},
		Resource: schema.GroupResource{Resource: "secrets"}, Verb: "watch", Err: errors.New("forbidden")}
	g.Expect(secrets.Error()).To(Equal("reflux may not watch secrets (kind Secret): reading Secrets is opt-in, include config/components/secrets"))
	g.Expect(errors.Unwrap(secrets)).To(MatchError("forbidden"))

	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	refused := apierrors.NewForbidden(gr, "", errors.New(`User "reflux" cannot list resource "widgets"`))
	var denied *WatchForbiddenError
	g.Expect(errors.As(forbiddenAs(refused, "list", gvk, gr, "team-a"), &denied)).To(BeTrue())
	g.Expect(*denied).To(Equal(WatchForbiddenError{GVK: gvk, Resource: gr, Namespace: "team-a", Verb: "list", Err: refused}))
	gone := apierrors.NewNotFound(gr, "")
	g.Expect(forbiddenAs(gone, "list", gvk, gr, "")).To(BeIdenticalTo(error(gone)), "other errors are client-go's to handle")
	g.Expect(forbiddenAs(nil, "watch", gvk, gr, "")).To(Succeed())
}

func TestWatchedKinds(t *testing.T) {
	g := NewWithT(t)
	ks := &kustomizev1.Kustomization{}
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
		{ID: "podinfo_podinfo_apps_Deployment", Version: "v1"},
		{ID: "podinfo_podinfo-flags__ConfigMap", Version: "v1"},
		{ID: "_podinfo__Namespace", Version: "v1"},
		{ID: "malformed", Version: "v1"},
	}}
	render := &desired.Render{GVKs: []schema.GroupVersionKind{
		{Group: "", Version: "v1", Kind: "ConfigMap"}, {Group: "", Version: "v1", Kind: "Service"},
	}}
	g.Expect(watchedKinds(ks, render)).To(Equal([]schema.GroupVersionKind{
		{Group: "", Version: "v1", Kind: "ConfigMap"},
		{Group: "", Version: "v1", Kind: "Namespace"},
		{Group: "", Version: "v1", Kind: "Service"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
	}), "the inventory's kinds before any render, the render's besides")
	g.Expect(watchedKinds(&kustomizev1.Kustomization{}, nil)).To(BeEmpty())
}
