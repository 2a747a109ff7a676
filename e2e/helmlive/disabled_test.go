package helmlive

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/reverse/record"
)

// withoutDriftDetection is a release file with no spec.driftDetection
// block at all: helm-controller's default, mode disabled. Its lines are
// the enabled file's, two fewer from spec.values on.
func withoutDriftDetection(file string) string {
	const block = "  driftDetection:\n    mode: enabled\n"
	if !strings.Contains(file, block) {
		panic("the release file has no driftDetection block to take out")
	}
	return strings.Replace(file, block, "", 1)
}

// openNotHeld matches a record that is open and not held: Detected, or
// Proposed once the prefilled branch that needs a decision is pushed.
func openNotHeld(d *refluxv1.Drift) error {
	switch {
	case !record.IsOpen(d):
		return fmt.Errorf("record %s is closed: %+v", d.Name, d.Status.Closed)
	case d.Status.State == refluxv1.DriftHeld || d.Status.HeldSince != nil:
		return fmt.Errorf("record %s is held since %v", d.Name, d.Status.HeldSince)
	}
	return nil
}

// TestAnEditUnderDisabledDriftDetectionIsRecordedNotHeld: Flux's default
// HelmRelease has no driftDetection block, so helm-controller never
// corrects drift (docs/flux-behaviour.md, TestLiveEditByDriftMode/
// disabled): alice's scale survives its reconciles, and only the next
// upgrade would take it back. What reflux does: it is the only detector
// here, so it records the edit with its values line (replicas are an
// Alert: a prefilled branch follows), but FluxReverts is false and it
// does not hold, since a hold keeps off only drift
// correction, and there is none to keep off (observe.Classify). When an
// upgrade then applies the chart over the edit, the record stays open as
// evidence; nothing was held, so nothing is reported lost.
func TestAnEditUnderDisabledDriftDetectionIsRecordedNotHeld(t *testing.T) {
	g := NewWithT(t)
	name := "disabled"
	tree := files(name, "", "  values:\n    replicaCount: 2\n")
	tree["release/release.yaml"] = withoutDriftDetection(tree["release/release.yaml"])
	app := newAppWith(t, name, fixture.AppOptions{Dir: chartDir, Files: tree, Paths: map[string]string{name: "./release"}})
	g.Expect(helmRelease(g, app).Spec.DriftDetection).To(BeNil(), "helm-controller's default")

	scale(g, app, 5)
	rec := app.WaitRecord(g, "Deployment", "app", fixture.All(fixture.HasField("/spec/replicas"), openNotHeld))
	f, err := fixture.Field(rec, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]string{f.GitValue, f.LiveValue}).To(Equal([]string{"2", "5"}))
	g.Expect(f.FluxReverts).To(BeFalse(), "drift correction is disabled")
	g.Expect(rec.Spec.Fields).To(HaveLen(1))
	_, f = tracedField(g, app, "/spec/replicas", "")
	g.Expect(*f.Origin).To(Equal(refluxv1.FieldOrigin{File: "release/release.yaml", Line: 19, Column: 19, Kind: "values",
		ValuesKeys: []string{"replicaCount"}, Template: "templates/deployment.yaml:8"}))

	for range 2 {
		reconciled(g, app)
		g.Expect(replicas(g, app)).To(Equal(int32(5)), "helm-controller does not revert in disabled mode")
		rec = app.WaitRecord(g, "Deployment", "app", openNotHeld)
		g.Expect(heldForHelm(app.Get(g, "app", &appsv1.Deployment{}))).To(BeFalse())
	}

	// An upgrade that changes only the ConfigMap's values applies the
	// whole chart, replicas included.
	ctx := context.Background()
	tree = files(name, "", "  values:\n    replicaCount: 2\n    config:\n      mode: maintenance\n")
	tree["release/release.yaml"] = withoutDriftDetection(tree["release/release.yaml"])
	_, err = env.Git.PushDir(ctx, app.Repo, fixture.Tree(t, chartDir, tree))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Reconcile(ctx, app.Source)).To(Succeed())
	app.Reconcile(g, name)
	g.Eventually(func(g Gomega) int {
		hr := helmRelease(g, app)
		g.Expect(hr.Status.History.Latest()).NotTo(BeNil())
		return hr.Status.History.Latest().Version
	}, fixture.Timeout, fixture.Interval).Should(Equal(2))
	g.Eventually(replicas).WithArguments(app).WithTimeout(fixture.Timeout).WithPolling(fixture.Interval).Should(Equal(int32(2)),
		"the upgrade took the edit back")

	// Nothing reflux does follows from the upgrade's write: the record
	// is neither resolved (Git does not declare 5) nor lost (not held).
	// The window is the one other tests give reflux to act, as it acts
	// within a second of a watch event.
	var later *refluxv1.Drift
	g.Consistently(func(g Gomega) {
		later = app.WaitRecord(g, "Deployment", "app", openNotHeld)
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
	g.Expect(later.Name).To(Equal(rec.Name))
	g.Expect(later.Status.Closed).To(BeNil(), "kept open as evidence")
	g.Expect(later.Spec.HelmRelease.Release).To(Equal(app.Name+"/app.v1"), "the release alice's edit was made against")
	f, err = fixture.Field(later, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.LiveValue).To(Equal("5"), "what alice changed")
	g.Expect(apimeta.FindStatusCondition(later.Status.Conditions, refluxv1.LostLiveCondition)).To(BeNil(),
		"LostLive is for a hold an upgrade overwrote; this edit was never held")
	// The upgrade changed the ConfigMap before helm-controller named the
	// new release in its status: helm-controller's own write, never a
	// record, not even one closed at once.
	g.Expect(app.Records(g, "ConfigMap", "app-settings")).To(BeEmpty(), "the upgrade's own write is not drift")
}
