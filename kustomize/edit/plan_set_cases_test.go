package edit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

var prodPodinfo = origin.ObjectRef{Kind: "Deployment", Namespace: "prod", Name: "podinfo"}

// prodChanges are five fields of the prod overlay, each written somewhere
// else: a replicas entry, an overlay patch file, a new overlay patch, an
// images entry and a patch of the Service.
var prodChanges = []Change{
	{Object: prodPodinfo, Pointer: "/spec/replicas", Value: int64(4)},
	{Object: prodPodinfo, Pointer: "/spec/template/spec/containers/0/resources/limits/memory", Value: "1Gi"},
	{Object: prodPodinfo, Pointer: "/spec/template/spec/containers/0/resources/requests/cpu", Value: "200m"},
	{Object: prodPodinfo, Pointer: "/spec/template/spec/containers/0/image", Value: "ghcr.io/stefanprodan/podinfo:6.7.1"},
	{Object: origin.ObjectRef{Kind: "Service", Namespace: "prod", Name: "podinfo"}, Pointer: "/spec/type", Value: "NodePort"},
}

// prodOptions points at a copy of the base-overlays tree, building prod,
// with builds counted.
func prodOptions(t testing.TB) (Options, *counter) {
	t.Helper()
	work := t.TempDir()
	if err := kustomize.CopyTree("../testdata/base-overlays", work); err != nil {
		t.Fatal(err)
	}
	builds := &counter{}
	return Options{Build: buildOptions(t, caseSpec{Kustomization: "flux-kustomization-prod.yaml"}, work), Render: builds.render}, builds
}

func TestPlanSetBuildsOnce(t *testing.T) {
	tests := []struct {
		name    string
		changes []Change
		planned int
	}{
		{"one change", prodChanges[:1], 1},
		{"five changes", prodChanges, 5},
		{"five changes and two refused", append(append([]Change(nil), prodChanges...),
			Change{Object: prodPodinfo, Pointer: "/spec/nope", Value: "x"},
			Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "nope"}, Pointer: "/spec/replicas", Value: int64(1)}), 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			opts, builds := prodOptions(t)
			before, err := NewBefore(context.Background(), opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(builds.builds()).To(Equal(1))

			res, err := PlanSet(context.Background(), opts, before, tt.changes)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Planned).To(HaveLen(tt.planned))
			g.Expect(builds.builds()-1).To(Equal(1), "PlanSet must build exactly once")
		})
	}
}

func TestPlanSetBuildCounts(t *testing.T) {
	tests := []struct {
		name    string
		before  bool
		changes []Change
		builds  int
	}{
		{"no before: it renders one", false, prodChanges, 2},
		{"nothing to plan: no build", true, []Change{{Object: prodPodinfo, Pointer: "/spec/nope", Value: "x"}}, 0},
		{"already held: no build", true, []Change{{Object: prodPodinfo, Pointer: "/spec/replicas", Value: int64(3)}}, 0},
		{"no changes: no build", true, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			opts, builds := prodOptions(t)
			var before *Before
			if tt.before {
				var err error
				before, err = NewBefore(context.Background(), opts)
				g.Expect(err).NotTo(HaveOccurred())
			}
			start := builds.builds()
			_, err := PlanSet(context.Background(), opts, before, tt.changes)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(builds.builds() - start).To(Equal(tt.builds))
		})
	}
}

func TestPlanAndPlanAllBuildTwice(t *testing.T) {
	g := NewWithT(t)
	opts, builds := prodOptions(t)
	_, err := Plan(context.Background(), opts, prodChanges[2])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(builds.builds()).To(Equal(2))

	opts, builds = prodOptions(t)
	_, err = PlanAll(context.Background(), opts, prodChanges)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(builds.builds()).To(Equal(2))

	// All or nothing: a refusal fails PlanAll before it verifies.
	opts, builds = prodOptions(t)
	_, err = PlanAll(context.Background(), opts, append([]Change{prodChanges[0]}, Change{Object: prodPodinfo, Pointer: "/spec/nope", Value: "x"}))
	g.Expect(err).To(MatchError(origin.ErrFieldNotFound))
	g.Expect(builds.builds()).To(Equal(1))
}

func TestPlanSetReportsEachChange(t *testing.T) {
	g := NewWithT(t)
	opts, _ := prodOptions(t)
	changes := []Change{
		{Object: prodPodinfo, Pointer: "/spec/nope", Value: "x"},
		prodChanges[2],
		{Object: origin.ObjectRef{Kind: "Deployment", Name: "nope"}, Pointer: "/spec/replicas", Value: int64(1)},
		{Object: prodPodinfo, Pointer: "/spec/replicas", Value: int64(3)},
		{Object: origin.ObjectRef{Kind: "Service", Namespace: "prod", Name: "podinfo"}, Pointer: "/spec/ports/0/port", Value: int64(80)},
		{Object: prodPodinfo, Pointer: "/spec/template/spec/containers/0/resources/requests/cpu", Value: "300m"},
	}
	res, err := PlanSet(context.Background(), opts, nil, changes)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(res.Planned).To(HaveLen(1))
	g.Expect(res.Planned[0].Index).To(Equal(1))
	g.Expect(res.Planned[0].Scope).To(Equal(ScopeOverlayPatch))
	g.Expect(res.Scope).To(Equal(ScopeOverlayPatch))
	g.Expect(res.Unchanged).To(Equal([]Change{changes[3]}))

	want := map[int]error{0: origin.ErrFieldNotFound, 2: origin.ErrObjectNotFound, 4: ErrUnsupported, 5: ErrConflict}
	g.Expect(res.Refused).To(HaveLen(len(want)))
	for _, r := range res.Refused {
		g.Expect(r.Change).To(Equal(changes[r.Index]))
		g.Expect(errors.Is(r.Err, want[r.Index])).To(BeTrue(), "change %d: %v", r.Index, r.Err)
	}
	// Only the planned change's files: the refused Service patch left
	// nothing behind.
	g.Expect(res.Files).To(HaveLen(2))
	g.Expect(res.Files).To(HaveKey("overlays/prod/kustomization.yaml"))
	g.Expect(string(res.Files["overlays/prod/reflux-deployment-podinfo.yaml"])).To(ContainSubstring("cpu: 200m"))
	g.Expect(string(res.Files["overlays/prod/reflux-deployment-podinfo.yaml"])).NotTo(ContainSubstring("Service"))
}

func TestPlanSetVerifyErrorNamesWhatMoved(t *testing.T) {
	g := NewWithT(t)
	builds := &counter{}
	opts := Options{Build: corpusOptions(t, "labels-annotations", ""), Render: builds.render}
	checkout := origin.ObjectRef{Kind: "Deployment", Name: "checkout"}
	res, err := PlanSet(context.Background(), opts, nil, []Change{
		{Object: checkout, Pointer: "/spec/template/spec/containers/0/image", Value: "example/checkout:5.0.2"},
		// A later labels transformer sets team again over the overlay
		// patch that would carry it.
		{Object: checkout, Pointer: "/metadata/labels/team", Value: "payments"},
	})
	g.Expect(res).To(BeNil())
	var ve *VerifyError
	g.Expect(errors.As(err, &ve)).To(BeTrue(), "error %v", err)
	g.Expect(ve.Moved).NotTo(BeEmpty())
	g.Expect(ve.Missed).To(ConsistOf(FieldDiff{Object: "Deployment//checkout", Pointer: "/metadata/labels/team", Before: "checkout", After: "payments"}))
	g.Expect(err.Error()).To(ContainSubstring("not reached: Deployment//checkout /metadata/labels/team: checkout -> payments"))
	g.Expect(builds.builds()).To(Equal(2), "no fallback build without an overlay entry")
}

// TestPlanSetDecidesEntriesFromTheRender covers the overlay images and
// replicas entries: whether one would reach another object is read from
// the before render, so each plan builds once.
func TestPlanSetDecidesEntriesFromTheRender(t *testing.T) {
	podinfo := origin.ObjectRef{Kind: "Deployment", Namespace: "dev", Name: "dev-podinfo"}
	tests := []struct {
		name   string
		tree   map[string]string
		path   string
		change Change
		scope  string
	}{
		{
			name: "image in no other object", tree: copyOf(t, "../testdata/base-overlays"), path: "overlays/dev",
			change: Change{Object: podinfo, Pointer: "/spec/template/spec/containers/0/image", Value: "ghcr.io/stefanprodan/podinfo:6.7.1"},
			scope:  ScopeOverlayEntry,
		},
		{
			name: "image shared with another Deployment", tree: copyOf(t, "testdata/shared-image-falls-back-to-patch/original"), path: "a",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "web"}, Pointer: "/spec/template/spec/containers/0/image", Value: "nginx:1.27"},
			scope:  ScopeOverlayPatch,
		},
		{
			name: "image shared with an init container", tree: sharedBase(initContainer), path: "a",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "web"}, Pointer: "/spec/template/spec/containers/0/image", Value: "nginx:1.27"},
			scope:  ScopeOverlayPatch,
		},
		{
			name: "replicas of no other object", tree: copyOf(t, "../testdata/base-overlays"), path: "overlays/dev",
			change: Change{Object: podinfo, Pointer: "/spec/replicas", Value: int64(2)},
			scope:  ScopeOverlayEntry,
		},
		{
			name: "replicas name shared with a StatefulSet", tree: sharedBase(statefulSetWeb), path: "a",
			change: Change{Object: origin.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "web"}, Pointer: "/spec/replicas", Value: int64(2)},
			scope:  ScopeOverlayPatch,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := writeTree(t, tt.tree)
			builds := &counter{}
			opts := Options{Build: kustomize.BuildOptions{Root: root, Path: tt.path}, Render: builds.render}
			before, err := NewBefore(context.Background(), opts)
			g.Expect(err).NotTo(HaveOccurred())
			res, err := PlanSet(context.Background(), opts, before, []Change{tt.change})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Refused).To(BeEmpty())
			g.Expect(res.Scope).To(Equal(tt.scope))
			g.Expect(builds.builds()).To(Equal(2), "one build before, one to verify")
		})
	}
}

// TestPlanSetFallsBackWhenAnEntryReachesMore builds a set in which an
// images entry looks safe in the before render but is not: another change
// of the set gives a second object the very image the entry rewrites.
// The verification shows it, and the set is planned again with a patch.
func TestPlanSetFallsBackWhenAnEntryReachesMore(t *testing.T) {
	g := NewWithT(t)
	tree := sharedBase("")
	tree["a/kustomization.yaml"] = "namespace: a\nresources:\n  - ../base\n  - tool.yaml\n"
	tree["a/tool.yaml"] = deployment("tool", "busybox:1.36")
	root := writeTree(t, tree)
	builds := &counter{}
	opts := Options{Build: kustomize.BuildOptions{Root: root, Path: "a"}, Render: builds.render}
	image := "/spec/template/spec/containers/0/image"
	res, err := PlanSet(context.Background(), opts, nil, []Change{
		{Object: origin.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "web"}, Pointer: image, Value: "nginx:1.27"},
		{Object: origin.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "tool"}, Pointer: image, Value: "nginx:1.25"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Planned).To(HaveLen(2))
	g.Expect(res.Planned[0].Scope).To(Equal(ScopeOverlayPatch))
	g.Expect(res.Planned[1].Scope).To(Equal(ScopeOrigin))
	g.Expect(string(res.Files["a/kustomization.yaml"])).NotTo(ContainSubstring("images"))
	g.Expect(builds.builds()).To(Equal(3), "before, the failed verification, the fallback's")
}

func TestPlanSetRefusesABeforeOfAnotherTree(t *testing.T) {
	g := NewWithT(t)
	opts, _ := prodOptions(t)
	before, err := NewBefore(context.Background(), opts)
	g.Expect(err).NotTo(HaveOccurred())
	other, _ := prodOptions(t)
	_, err = PlanSet(context.Background(), other, before, prodChanges[:1])
	g.Expect(err).To(MatchError(ContainSubstring("the before render is of")))
}

func TestBeforeValue(t *testing.T) {
	opts := Options{Build: corpusOptions(t, "configmap-generator", "flux-kustomization.yaml")}
	before, err := NewBefore(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		ch    Change
		value any
		found bool
		err   error
	}{
		{"a leaf", Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "app"}, Pointer: "/spec/template/spec/containers/0/image"}, "example/app:1.0.0", true, nil},
		{"a generated name without its hash", Change{Object: origin.ObjectRef{Kind: "ConfigMap", Name: "app-settings"}, Pointer: "/data/LOG_LEVEL"}, "debug", true, nil},
		{"kind in any case", Change{Object: origin.ObjectRef{Kind: "deployment", Name: "app"}, Pointer: "/kind"}, "Deployment", true, nil},
		{"an absent field", Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "app"}, Pointer: "/spec/paused"}, nil, false, nil},
		{"an absent object", Change{Object: origin.ObjectRef{Kind: "Deployment", Name: "nope"}, Pointer: "/spec/replicas"}, nil, false, origin.ErrObjectNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v, found, err := before.Value(tt.ch)
			if tt.err != nil {
				g.Expect(err).To(MatchError(tt.err))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(Equal(tt.found))
			if !tt.found {
				g.Expect(v).To(BeNil())
				return
			}
			g.Expect(v).To(Equal(tt.value))
		})
	}
	var none *Before
	_, _, err = none.Value(Change{})
	NewWithT(t).Expect(err).To(HaveOccurred())
}

// copyOf reads a tree into memory, for writeTree.
func copyOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	return readTree(t, dir)
}

// writeTree writes files (slash-separated paths) into a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, data := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Extra documents for sharedBase.
const (
	initContainer  = "init"
	statefulSetWeb = "statefulset"
)

// sharedBase is a base with a Deployment web (nginx:1.25) that overlays a
// and b both include, plus an extra object of the base.
func sharedBase(extra string) map[string]string {
	web := deployment("web", "nginx:1.25")
	switch extra {
	case initContainer:
		web += "      initContainers:\n        - name: init\n          image: nginx:1.25\n"
	case statefulSetWeb:
		web += "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: web\nspec:\n  replicas: 1\n" +
			"  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n" +
			"    spec:\n      containers:\n        - name: db\n          image: postgres:16\n"
	}
	return map[string]string{
		"base/kustomization.yaml": "resources:\n  - web.yaml\n",
		"base/web.yaml":           web,
		"a/kustomization.yaml":    "namespace: a\nresources:\n  - ../base\n",
		"b/kustomization.yaml":    "namespace: b\nresources:\n  - ../base\n",
	}
}

func deployment(name, image string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\nspec:\n  replicas: 1\n" +
		"  selector:\n    matchLabels: {app: " + name + "}\n  template:\n    metadata:\n      labels: {app: " + name + "}\n" +
		"    spec:\n      containers:\n        - name: main\n          image: " + image + "\n"
}
