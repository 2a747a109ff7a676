package observe

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	kustomize "github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	refluxkustomize "github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// podinfo renders testdata/podinfo/overlays/prod and indexes it.
func podinfo(t *testing.T) (*origin.Index, map[string]*unstructured.Unstructured) {
	t.Helper()
	ks := &kustomizev1.Kustomization{Spec: kustomizev1.KustomizationSpec{Path: "./overlays/prod"}}
	idx, res, err := origin.Build(context.Background(), refluxkustomize.BuildOptions{Root: "testdata/podinfo", Kustomization: ks})
	if err != nil {
		t.Fatalf("building testdata/podinfo: %v", err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, o := range res.Objects {
		objs[o.GetKind()] = o
	}
	return idx, objs
}

func classifier(t *testing.T, rules ...refluxv1.Rule) *classify.Classifier {
	t.Helper()
	c, err := classify.New(&refluxv1.ReverseSyncPolicySpec{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOrigin(t *testing.T) {
	idx, objs := podinfo(t)
	deploy, flags := origin.RefOf(objs["Deployment"]), origin.RefOf(objs["ConfigMap"])
	hashed, _, err := origin.Build(context.Background(), refluxkustomize.BuildOptions{Root: "../../kustomize/testdata/env-file-bare-keys"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		idx  *origin.Index
		ref  origin.ObjectRef
		ptr  string
		want *refluxv1.FieldOrigin
	}{
		{"a value the overlay patches", idx, deploy, "/spec/replicas",
			&refluxv1.FieldOrigin{File: "overlays/prod/deployment-patch.yaml", Line: 6, Column: 13, Kind: "patch"}},
		{"a value the base declares", idx, flags, "/data/FEATURE_SEARCH",
			&refluxv1.FieldOrigin{File: "base/flags.yaml", Line: 7, Column: 19, Kind: "resource"}},
		{"a key a human added: the document of its parent, no line", idx, flags, "/data/FEATURE_DARK_MODE",
			&refluxv1.FieldOrigin{File: "base/flags.yaml", Kind: "resource"}},
		{"a namespace the overlay sets", idx, flags, "/metadata/namespace",
			&refluxv1.FieldOrigin{File: "overlays/prod/kustomization.yaml", Line: 3, Column: 12, Kind: "namespace"}},
		{"no index", nil, flags, "/data/FEATURE_SEARCH", nil},
		{"a refused field carries why and where to edit instead", hashed,
			origin.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "checkout", Name: "checkout"},
			"/spec/template/spec/containers/0/envFrom/0/configMapRef/name",
			&refluxv1.FieldOrigin{Refused: "hash-suffix", Why: origin.ReasonHashSuffix.Why(), EditAt: "kustomization.yaml:7:11"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Origin(tt.idx, tt.ref, tt.ptr)).To(Equal(tt.want))
		})
	}
}

func TestClassify(t *testing.T) {
	noHold := false
	c := classifier(t,
		refluxv1.Rule{Name: "feature-flags", Kinds: []string{"ConfigMap"}, Fields: []string{"/data/*"}, Action: refluxv1.MergeAction},
		refluxv1.Rule{Name: "unheld", Fields: []string{"/spec/paused"}, Action: refluxv1.AlertAction, Hold: &noHold},
	)
	field := func(ptr string, ct refluxv1.ChangeType, git, live string, reverts bool) refluxv1.DriftField {
		return refluxv1.DriftField{Pointer: ptr, ChangeType: ct, GitValue: git, LiveValue: live, FluxReverts: reverts}
	}
	tests := []struct {
		name     string
		kind     string
		field    refluxv1.DriftField
		hotfix   bool
		want     refluxv1.DriftField
		wantHold bool
	}{
		{"a rule merges a new flag", "ConfigMap", field("/data/NEW", refluxv1.ChangeAdd, "", `"true"`, true), false,
			refluxv1.DriftField{Action: refluxv1.MergeAction, Severity: refluxv1.SeverityMedium, Rule: "feature-flags"}, true},
		{"a default alerts on an image", "Deployment",
			field("/spec/template/spec/containers/0/image", refluxv1.ChangeUpdate, `"a:1"`, `"a:0"`, true), false,
			refluxv1.DriftField{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh, Rule: "default:image"}, true},
		{"a 4x memory limit is critical", "Deployment",
			field("/spec/template/spec/containers/0/resources/limits/memory", refluxv1.ChangeUpdate, `"256Mi"`, `"1Gi"`, true), false,
			refluxv1.DriftField{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityCritical, Rule: "default:resources"}, true},
		{"a rule without a hold", "Deployment", field("/spec/paused", refluxv1.ChangeAdd, "", "true", true), false,
			refluxv1.DriftField{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityMedium, Rule: "unheld"}, false},
		{"nothing to hold when Flux keeps the value", "ConfigMap", field("/data/NEW", refluxv1.ChangeAdd, "", `"x"`, false), false,
			refluxv1.DriftField{Action: refluxv1.MergeAction, Severity: refluxv1.SeverityMedium, Rule: "feature-flags"}, false},
		{"a manual hotfix is held and never written", "ConfigMap", field("/data/NEW", refluxv1.ChangeAdd, "", `"x"`, true), true,
			refluxv1.DriftField{Action: refluxv1.IgnoreAction, Severity: refluxv1.SeverityMedium, Rule: "manual-hotfix"}, true},
		{"a manual hotfix on an unheld rule is still held", "Deployment", field("/spec/paused", refluxv1.ChangeAdd, "", "true", true), true,
			refluxv1.DriftField{Action: refluxv1.IgnoreAction, Severity: refluxv1.SeverityMedium, Rule: "manual-hotfix"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fields := []refluxv1.DriftField{tt.field}
			g.Expect(Classify(c, tt.kind, "", fields, tt.hotfix).Hold).To(Equal(tt.wantHold))
			g.Expect(fields[0].Action).To(Equal(tt.want.Action))
			g.Expect(fields[0].Severity).To(Equal(tt.want.Severity))
			g.Expect(fields[0].Rule).To(Equal(tt.want.Rule))
		})
	}
}

// TestClassifyHoldNever: under spec.hold: Never nothing asks for a hold,
// not even a declared manual hotfix, which stays unwritten.
func TestClassifyHoldNever(t *testing.T) {
	c, err := classify.New(&refluxv1.ReverseSyncPolicySpec{Hold: refluxv1.HoldNever,
		Rules: []refluxv1.Rule{{Name: "flags", Kinds: []string{"ConfigMap"}, Fields: []string{"/data/*"}, Action: refluxv1.MergeAction}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, hotfix := range []bool{false, true} {
		g := NewWithT(t)
		fields := []refluxv1.DriftField{{Pointer: "/data/NEW", ChangeType: refluxv1.ChangeAdd, LiveValue: `"x"`, FluxReverts: true}}
		g.Expect(Classify(c, "ConfigMap", "", fields, hotfix).Hold).To(BeFalse(), "hotfix %v", hotfix)
		if hotfix {
			g.Expect(fields[0].Action).To(Equal(refluxv1.IgnoreAction))
			g.Expect(fields[0].Rule).To(Equal("manual-hotfix"))
		} else {
			g.Expect(fields[0].Action).To(Equal(refluxv1.MergeAction))
		}
	}
}

func TestObserve(t *testing.T) {
	g := NewWithT(t)
	idx, objs := podinfo(t)
	want := objs["ConfigMap"]
	live := want.DeepCopy()
	live.SetUID("uid-1")
	live.SetAnnotations(map[string]string{"ops.source": "manual"})
	at := metav1.NewTime(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
	now := at.Add(time.Second)
	res := drift.Result{Fields: []drift.Field{{
		Pointer: "/data/FEATURE_DARK_MODE", GitPointer: "/data/FEATURE_DARK_MODE", ChangeType: refluxv1.ChangeAdd,
		LiveValue: `"true"`, FluxReverts: true,
		Modifier: &refluxv1.Modifier{Manager: "kubectl-edit", Operation: "Update", Time: &at},
	}}}
	var asked []string
	got := Observe(Input{
		Kustomization: refluxv1.KustomizationRef{Namespace: "flux-system", Name: "podinfo"}, Policy: "apps",
		Revision: "main@sha1:abc", Live: live, Desired: want, Result: res, Index: idx,
		Classifier: classifier(t), Now: now,
		Attribute: func(manager string, when time.Time) Who {
			asked = append(asked, manager+"@"+when.Format(time.RFC3339))
			return Who{User: "oncall@example.com", Groups: []string{"oncall"}}
		},
	})
	g.Expect(got.Hold).To(BeTrue(), "a declared hotfix is held")
	obs := got.Observation
	g.Expect(obs.ManualHotfix).To(BeTrue())
	g.Expect(obs.Object).To(Equal(refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "podinfo", Name: "podinfo-flags", UID: "uid-1"}))
	g.Expect(obs.Revision).To(Equal("main@sha1:abc"))
	g.Expect(obs.Now).To(Equal(now))
	g.Expect(obs.Fields).To(HaveLen(1))
	f := obs.Fields[0]
	g.Expect(f.Origin).To(Equal(&refluxv1.FieldOrigin{File: "base/flags.yaml", Kind: "resource"}))
	g.Expect(f.Modifier.User).To(Equal("oncall@example.com"))
	g.Expect(f.Modifier.Groups).To(Equal([]string{"oncall"}))
	g.Expect(asked).To(Equal([]string{"kubectl-edit@2026-12-01T02:00:00Z"}), "attributed at the write's own time")
	g.Expect(f.Action).To(Equal(refluxv1.IgnoreAction))
}

func TestObserveUsesTheRenderedPointer(t *testing.T) {
	g := NewWithT(t)
	_, objs := podinfo(t)
	want := objs["Deployment"]
	res := drift.Result{Fields: []drift.Field{
		{Pointer: "/spec/template/spec/containers/1/image", GitPointer: "/spec/template/spec/containers/0/image",
			ChangeType: refluxv1.ChangeUpdate, GitValue: `"a"`, LiveValue: `"b"`, FluxReverts: true},
		{Pointer: "/spec/template/spec/containers/0/env/0", GitPointer: "/spec/template/spec/containers/-/env/0",
			ChangeType: refluxv1.ChangeAdd, LiveValue: `{"name":"X"}`, FluxReverts: true},
	}}
	got := Observe(Input{Live: want.DeepCopy(), Desired: want, Result: res, Classifier: classifier(t)})
	g.Expect(got.Observation.Fields[0].Pointer).To(Equal("/spec/template/spec/containers/0/image"),
		"records speak of the overlay's numbering")
	g.Expect(got.Observation.Fields[1].Pointer).To(Equal("/spec/template/spec/containers/0/env/0"),
		"an element only live has keeps its live pointer")
}

func TestIgnorePaths(t *testing.T) {
	g := NewWithT(t)
	_, objs := podinfo(t)
	ks := &kustomizev1.Kustomization{Spec: kustomizev1.KustomizationSpec{Ignore: []kustomizev1.IgnoreRule{
		{Paths: []string{"/spec/replicas"}, Target: &kustomize.Selector{Kind: "Deployment"}},
		{Paths: []string{"/data/FEATURE_SEARCH"}},
	}}}
	g.Expect(IgnorePaths(ks, objs["Deployment"])).To(Equal([]string{"/spec/replicas", "/data/FEATURE_SEARCH"}))
	g.Expect(IgnorePaths(ks, objs["ConfigMap"])).To(Equal([]string{"/data/FEATURE_SEARCH"}))
}
