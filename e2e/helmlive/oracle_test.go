package helmlive

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/reverse/record"
)

// counts is one object's drift as helm-controller summarises it: the
// operations of the JSON patch that would take the live object back to
// the release's.
type counts struct{ additions, changes, removals int }

// changedLine is one object of helm-controller's Drifted message.
var changedLine = regexp.MustCompile(`^(\S+) changed \((\d+) additions, (\d+) changes, (\d+) removals\)$`)

// helmDrift reads helm-controller's own report: the Drifted condition of
// the HelmRelease, "Kind/namespace/name" → counts; empty when it found
// none.
func helmDrift(g Gomega, hr *helmv2.HelmRelease) map[string]counts {
	c := conditions.Get(hr, helmv2.DriftedCondition)
	g.Expect(c).NotTo(BeNil(), "helm-controller detects drift in warn mode")
	out := map[string]counts{}
	if c.Reason == helmv2.NoDriftDetectedReason {
		return out
	}
	g.Expect(c.Reason).To(Equal(helmv2.DriftDetectedReason))
	lines := strings.Split(c.Message, "\n")
	for _, l := range lines[1:] {
		m := changedLine.FindStringSubmatch(l)
		g.Expect(m).NotTo(BeNil(), "a line of helm-controller's summary: %q", l)
		n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		out[m[1]] = counts{additions: n(2), changes: n(3), removals: n(4)}
	}
	return out
}

// refluxDrift is the same from reflux's open records of the app's
// objects: a field Git declares and live lacks is the patch's addition,
// a value live changed its change, a field only live has its removal.
func refluxDrift(g Gomega, app *fixture.App) map[string]counts {
	list := &refluxv1.DriftList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(app.Name))).To(Succeed())
	out := map[string]counts{}
	for _, d := range list.Items {
		if d.Spec.HelmRelease == nil || !record.IsOpen(&d) || len(d.Spec.Fields) == 0 {
			continue
		}
		var c counts
		for _, f := range d.Spec.Fields {
			switch f.ChangeType {
			case refluxv1.ChangeRemove:
				c.additions++
			case refluxv1.ChangeUpdate:
				c.changes++
			case refluxv1.ChangeAdd:
				c.removals++
			}
		}
		o := d.Spec.Object
		out[o.Kind+"/"+o.Namespace+"/"+o.Name] = c
	}
	return out
}

// TestWarnModeAgreesWithHelmController is the oracle of issue 19 §3: with
// spec.driftDetection.mode warn, helm-controller reports drift and
// corrects nothing, so reflux's records and helm-controller's Drifted
// condition describe the same live objects. After each of alice's edits,
// one on top of the other, helm-controller is made to look, and reflux's
// open records must name the objects its report names, with as many
// fields of each kind, and no others.
func TestWarnModeAgreesWithHelmController(t *testing.T) {
	g := NewWithT(t)
	name := "warned"
	tree := files(name, "", "")
	tree["release/release.yaml"] = strings.Replace(tree["release/release.yaml"], "mode: enabled", "mode: warn", 1)
	app := newAppWith(t, name, fixture.AppOptions{Dir: chartDir, Files: tree, Paths: map[string]string{name: "./release"}})
	deploy := &appsv1.Deployment{}
	deploy.Namespace, deploy.Name = app.Name, "app"
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = app.Name, "app-settings"

	edits := []struct {
		name string
		edit func(g Gomega)
		want int // objects helm-controller reports drifted after it
	}{
		{"scaled", func(g Gomega) {
			fixture.KubectlEdit(g, alice.Client, deploy, func() { deploy.Spec.Replicas = ptr.To(int32(5)) })
		}, 1},
		{"a value changed and a key added", func(g Gomega) {
			fixture.KubectlEdit(g, alice.Client, cm, func() { cm.Data["greeting"], cm.Data["extra"] = "hi", "yes" })
		}, 2},
		{"a declared key removed", func(g Gomega) { fixture.KubectlEdit(g, alice.Client, cm, func() { delete(cm.Data, "color") }) }, 2},
		{"the image changed", func(g Gomega) {
			fixture.KubectlEdit(g, alice.Client, deploy, func() {
				deploy.Spec.Template.Spec.Containers[0].Image = "registry.invalid/reflux/app:0.9.0"
			})
		}, 2},
		{"a pod label added", func(g Gomega) {
			fixture.KubectlEdit(g, alice.Client, deploy, func() { deploy.Spec.Template.Labels["team"] = "payments" })
		}, 2},
		{"scaled back by hand", func(g Gomega) {
			fixture.KubectlEdit(g, alice.Client, deploy, func() { deploy.Spec.Replicas = ptr.To(int32(2)) })
		}, 2},
		{"the ConfigMap put back by hand", func(g Gomega) {
			fixture.KubectlEdit(g, alice.Client, cm, func() { cm.Data["greeting"], cm.Data["color"] = "hello", "blue" })
		}, 1},
	}
	for _, e := range edits {
		e.edit(g)
		hr := helmRelease(g, app)
		g.Expect(env.Reconcile(context.Background(), hr)).To(Succeed())
		want := helmDrift(g, hr)
		g.Expect(want).To(HaveLen(e.want), "%s: helm-controller reports %v", e.name, want)
		g.Eventually(func(g Gomega) map[string]counts { return refluxDrift(g, app) }, fixture.Timeout, fixture.Interval).
			Should(Equal(want), "%s: reflux's records against helm-controller's Drifted %v", e.name, want)
		g.Expect(hr.Status.History.Latest().Version).To(Equal(1), "warn mode corrects nothing")
	}
	// Asking helm-controller to look, as `flux reconcile` does, is no
	// drift of the HelmRelease.
	g.Expect(app.Records(g, helmv2.HelmReleaseKind, "app")).To(BeEmpty())
	g.Expect(fmt.Sprint(refluxDrift(g, app))).To(ContainSubstring("Deployment/" + name + "/app"))
}
