package drift

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// replicasDrift is the drift every case below starts from.
var replicasDrift = want{Pointer: "/spec/replicas", ChangeType: "Update", GitValue: "3", LiveValue: "5",
	FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"}

// TestDetectFluxAnnotations checks that the annotations kustomize-controller
// reads are honoured where it reads them: exclusions on either side,
// IfNotPresent on the Git side only (docs/flux-behaviour.md).
func TestDetectFluxAnnotations(t *testing.T) {
	tests := []struct {
		name string
		// git and live are annotations on the Git object and written live
		// by reflux.
		git, live   map[string]string
		skipped     SkipReason
		excluded    SkipReason
		wantReplica bool
	}{
		{name: "ssa Ignore in Git", git: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Ignore"}, skipped: SkipIgnore},
		{name: "ssa IfNotPresent in Git", git: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}, skipped: SkipIfNotPresent},
		{name: "reconcile disabled in Git", git: map[string]string{"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}, skipped: SkipReconcileDisabled},
		{name: "values match case-insensitively", git: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "ignore"}, skipped: SkipIgnore},
		{
			name: "reconcile disabled in cluster holds the object", live: map[string]string{"kustomize.toolkit.fluxcd.io/reconcile": "disabled"},
			excluded: SkipReconcileDisabled, wantReplica: true,
		},
		{
			name: "ssa Ignore in cluster holds the object", live: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Ignore"},
			excluded: SkipIgnore, wantReplica: true,
		},
		{
			name: "ssa IfNotPresent in cluster does not hold", live: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"},
			wantReplica: true,
		},
		{name: "ssa Merge in Git still reverts declared fields", git: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Merge"}, wantReplica: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), deploymentYAML)
			git.SetAnnotations(tt.git)
			fluxApply(t, git)
			edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, int64(5), "spec", "replicas") })
			if tt.live != nil {
				reflux(t, git, tt.live)
			}

			in := Input{Desired: git, Live: get(t, git)}
			res, err := newDetector(t).Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			expectInProcessAgrees(g, t, in, res)
			g.Expect(res.Skipped).To(Equal(tt.skipped))
			g.Expect(res.LiveExcluded).To(Equal(tt.excluded))
			if !tt.wantReplica {
				g.Expect(res.Fields).To(BeEmpty())
				return
			}
			// reflux's own annotation is allow-listed, so not drift.
			g.Expect(got(g, res.Fields)).To(Equal([]want{replicasDrift}))
		})
	}
}

// reflux writes annotations on the live object the way the hold does: a
// merge patch as reflux's field manager.
func reflux(t *testing.T, like *unstructured.Unstructured, annotations map[string]string) {
	t.Helper()
	patch := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	u := get(t, like)
	raw, err := (&unstructured.Unstructured{Object: patch}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, raw),
		client.FieldOwner(refluxv1.FieldManager)); err != nil {
		t.Fatalf("patching as reflux: %v", err)
	}
}

// TestDetectMergeKeepsAdditions checks that ssa: Merge, which turns off
// Flux's managedFields cleanup, leaves kubectl's additions in place.
func TestDetectMergeKeepsAdditions(t *testing.T) {
	for _, side := range []string{"git", "live"} {
		t.Run(side, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), configMapYAML)
			merge := map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Merge"}
			if side == "git" {
				git.SetAnnotations(merge)
			}
			fluxApply(t, git)
			if side == "live" {
				reflux(t, git, merge)
			}
			edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, "3", "data", "c") })

			in := Input{Desired: git, Live: get(t, git)}
			res, err := newDetector(t).Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			expectInProcessAgrees(g, t, in, res)
			g.Expect(got(g, res.Fields)).To(Equal([]want{{Pointer: "/data/c", ChangeType: "Add", LiveValue: `"3"`,
				FluxReverts: false, Manager: "kubectl-edit", Operation: "Update"}}))
		})
	}
}

// TestDetectIgnorePaths checks spec.ignore-style paths: the path and all
// below it never drift; "" skips the object.
func TestDetectIgnorePaths(t *testing.T) {
	tests := []struct {
		name    string
		paths   []string
		want    []want
		skipped SkipReason
	}{
		{name: "exact path", paths: []string{"/spec/replicas"}, want: []want{imageDrift()}},
		{name: "parent path", paths: []string{"/spec/template/spec/containers"}, want: []want{replicasDrift}},
		{name: "unrelated path", paths: []string{"/spec/paused"}, want: []want{replicasDrift, imageDrift()}},
		{name: "whole object", paths: []string{""}, want: []want{}, skipped: SkipIgnoredRoot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), deploymentYAML)
			fluxApply(t, git)
			edit(t, git, "kubectl-edit", func(u map[string]any) {
				set(t, u, int64(5), "spec", "replicas")
				set(t, containers(u)[0].(map[string]any), "ghcr.io/example/web:1.0.1", "image")
			})
			in := Input{Desired: git, Live: get(t, git), IgnorePaths: tt.paths}
			res, err := newDetector(t).Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			expectInProcessAgrees(g, t, in, res)
			g.Expect(res.Skipped).To(Equal(tt.skipped))
			g.Expect(got(g, res.Fields)).To(Equal(tt.want))
		})
	}
}

func imageDrift() want {
	return want{Pointer: "/spec/template/spec/containers/0/image", ChangeType: "Update",
		GitValue: `"ghcr.io/example/web:1.0.0"`, LiveValue: `"ghcr.io/example/web:1.0.1"`,
		FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"}
}

// TestSkipAndUnreverted: which declared objects Flux never applies, and
// which live ones it leaves other writers' fields on.
func TestSkipAndUnreverted(t *testing.T) {
	with := func(key, value string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName("flags")
		if key != "" {
			u.SetAnnotations(map[string]string{key: value})
		}
		return u
	}
	tests := []struct {
		name       string
		obj        *unstructured.Unstructured
		skip       SkipReason
		unreverted bool
	}{
		{"plain", with("", ""), "", false},
		{"ssa: Ignore", with("kustomize.toolkit.fluxcd.io/ssa", "Ignore"), SkipIgnore, true},
		{"ssa: IfNotPresent", with("kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent"), SkipIfNotPresent, false},
		{"ssa: Merge", with("kustomize.toolkit.fluxcd.io/ssa", "merge"), "", true},
		{"reconcile: disabled (a hold)", with("kustomize.toolkit.fluxcd.io/reconcile", "disabled"), SkipReconcileDisabled, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(DesiredSkip(tt.obj)).To(Equal(tt.skip))
			g.Expect(Unreverted(tt.obj)).To(Equal(tt.unreverted))
		})
	}
}
