package release

import (
	"context"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func TestSummary(t *testing.T) {
	named := func(kind, ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	changed := []Field{{Pointer: "/data/a", ChangeType: refluxv1.ChangeUpdate}}
	tests := []struct {
		name    string
		o       ObjectDrift
		summary string
		changed bool
	}{
		{name: "in sync", o: ObjectDrift{Desired: named("ConfigMap", "apps", "a")}},
		{name: "changed", changed: true,
			o:       ObjectDrift{Desired: named("ConfigMap", "apps", "a"), Result: Result{Fields: changed, Counts: Counts{Additions: 1, Changes: 2, Removals: 3}}},
			summary: "ConfigMap/apps/a changed (1 additions, 2 changes, 3 removals)"},
		{name: "cluster-scoped", changed: true,
			o:       ObjectDrift{Desired: named("ClusterRole", "", "r"), Result: Result{Fields: changed, Counts: Counts{Changes: 1}}},
			summary: "ClusterRole/r changed (0 additions, 1 changes, 0 removals)"},
		{name: "missing", changed: true, o: ObjectDrift{Desired: named("ConfigMap", "apps", "a"), Result: Result{Missing: true}},
			summary: "ConfigMap/apps/a removed"},
		{name: "excluded by the chart, even when missing",
			o:       ObjectDrift{Desired: named("ConfigMap", "apps", "a"), Result: Result{Missing: true, Excluded: ExcludedByChart}},
			summary: "ConfigMap/apps/a excluded"},
		{name: "held by reflux with fields: excluded for helm-controller",
			o:       ObjectDrift{Desired: named("ConfigMap", "apps", "a"), Result: Result{Fields: changed, Counts: Counts{Changes: 1}, Excluded: HeldByReflux}},
			summary: "ConfigMap/apps/a excluded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.o.Summary()).To(Equal(tt.summary))
			g.Expect(tt.o.Changed()).To(Equal(tt.changed))
		})
	}
}

func TestDriftMessage(t *testing.T) {
	g := NewWithT(t)
	ref := Ref{Name: "web", Namespace: "apps", Version: 3}
	changedCM := ObjectDrift{Desired: obj(t, cmDesired), Result: Result{
		Fields: []Field{{Pointer: "/data/greeting", ChangeType: refluxv1.ChangeUpdate}}, Counts: Counts{Changes: 1}}}
	held := ObjectDrift{Desired: obj(t, cmDesired), Result: Result{
		Fields: []Field{{Pointer: "/data/greeting", ChangeType: refluxv1.ChangeUpdate}}, Counts: Counts{Changes: 1}, Excluded: HeldByReflux}}
	synced := ObjectDrift{Desired: obj(t, "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: apps\n")}

	g.Expect(Drift{Release: ref, Objects: []ObjectDrift{synced, changedCM, held}}.Message()).To(Equal(
		"Cluster state of release apps/web.v3 has drifted from the desired state:\n" +
			"ConfigMap/apps/settings changed (0 additions, 1 changes, 0 removals)\n" +
			"ConfigMap/apps/settings excluded"))
	g.Expect(Drift{Release: ref, Objects: []ObjectDrift{synced, held}}.Message()).To(BeEmpty(),
		"an excluded object alone is no drift for helm-controller")
	g.Expect(Drift{Release: ref}.Changed()).To(BeFalse())
}

// TestDetectAll diffs a release's objects through one client: live ones
// read, missing ones reported, ignore rules selected per object.
func TestDetectAll(t *testing.T) {
	g := NewWithT(t)
	answer := liveCM(t, "hello", nil)
	answer.SetAnnotations(nil)
	f := &fakeApplier{answer: answer, objects: map[string]*unstructured.Unstructured{"settings": liveCM(t, "hotfix", nil)}}
	d, err := New(f)
	g.Expect(err).NotTo(HaveOccurred())
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}}
	hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: helmv2.DriftDetectionWarn, Ignore: []helmv2.IgnoreRule{
		{Paths: []string{""}, Target: &kustomize.Selector{Name: "ignored"}},
	}}
	hr.Status.History = helmv2.Snapshots{{Name: "web", Namespace: "apps", Version: 2}}
	missing, ignored := obj(t, cmDesired), obj(t, cmDesired)
	missing.SetName("gone")
	ignored.SetName("ignored")

	got, err := d.DetectAll(context.Background(), hr, []*unstructured.Unstructured{obj(t, cmDesired), missing, ignored})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Release).To(Equal(Ref{Name: "web", Namespace: "apps", Version: 2, StorageNamespace: "apps"}))
	g.Expect(got.Message()).To(Equal("Cluster state of release apps/web.v2 has drifted from the desired state:\n" +
		"ConfigMap/apps/settings changed (0 additions, 1 changes, 0 removals)\n" +
		"ConfigMap/apps/gone removed\n" +
		"ConfigMap/apps/ignored excluded"))
	g.Expect(f.sent).To(HaveLen(1), "one dry run, for the one object diffed")

	_, err = d.DetectAll(context.Background(), &helmv2.HelmRelease{}, nil)
	g.Expect(err).To(MatchError(ErrNoHistory))
}
