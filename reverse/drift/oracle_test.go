package drift

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/normalize"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFluxRevertsWhatDetectPredicts checks FluxReverts against Flux's own
// apply code: after each drift, it runs fluxcd/pkg/ssa's ResourceManager
// with the options kustomize-controller v1.9.6 builds in its apply step,
// then detects again. What remains must be exactly the fields predicted
// to survive (FluxReverts false), with the same live values.
func TestFluxRevertsWhatDetectPredicts(t *testing.T) {
	tests := []struct {
		name        string
		manifest    string
		annotations map[string]string
		change      func(t *testing.T, git *unstructured.Unstructured)
	}{
		{name: "kubectl edits replicas, image and an annotation", manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					set(t, u, int64(5), "spec", "replicas")
					set(t, containers(u)[0].(map[string]any), "ghcr.io/example/web:9", "image")
					set(t, u, "x", "metadata", "annotations", "example.com/hotfix")
				})
			}},
		{name: "legacy-app changes a key and adds one", manifest: configMapYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "legacy-app", func(u map[string]any) {
					set(t, u, "10", "data", "a")
					set(t, u, "3", "data", "c")
				})
			}},
		{name: "kubectl and legacy-app add keys", manifest: configMapYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, "3", "data", "c") })
				edit(t, git, "legacy-app", func(u map[string]any) { set(t, u, "4", "data", "d") })
			}},
		{name: "kubectl removes a key", manifest: configMapYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) { unstructured.RemoveNestedField(u, "data", "b") })
			}},
		{name: "ssa Merge keeps kubectl's additions", manifest: configMapYAML,
			annotations: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Merge"},
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					set(t, u, "10", "data", "a")
					set(t, u, "3", "data", "c")
				})
			}},
		{name: "ssa Merge in cluster keeps kubectl's additions", manifest: configMapYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				reflux(t, git, map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Merge"})
				edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, "3", "data", "c") })
			}},
		{name: "kubectl replaces a container and reorders", manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					c := containers(u)
					set(t, u, []any{map[string]any{"name": "debug", "image": "busybox"}, c[0]}, "spec", "template", "spec", "containers")
				})
			}},
		{name: "legacy-app adds an env var and a label", manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "legacy-app", func(u map[string]any) {
					app := containers(u)[0].(map[string]any)
					app["env"] = append(app["env"].([]any), map[string]any{"name": "DEBUG", "value": "1"})
					set(t, u, "yes", "metadata", "labels", "legacy")
				})
			}},
		{name: "kubectl server-side apply changes and adds", manifest: configMapYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				partialApply(t, git, "kubectl", map[string]any{"data": map[string]any{"a": "10", "c": "3"}})
			}},
		{name: "a key kubectl added that legacy-app shares survives", manifest: configMapYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, "3", "data", "c") })
				partialApply(t, git, "legacy-app", map[string]any{"data": map[string]any{"c": "3"}})
			}},
		{name: "kubectl edits a Service's ports", manifest: serviceYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					ports, _, _ := unstructured.NestedSlice(u, "spec", "ports")
					p := ports[0].(map[string]any)
					p["targetPort"] = int64(9090)
					ports = append(ports, map[string]any{"name": "metrics", "port": int64(9100), "protocol": "TCP"})
					p["name"] = "http"
					set(t, u, ports, "spec", "ports")
				})
			}},
		{name: "legacy-app mounts a volume", manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "legacy-app", func(u map[string]any) {
					set(t, u, []any{map[string]any{"name": "cache", "emptyDir": map[string]any{}}}, "spec", "template", "spec", "volumes")
					app := containers(u)[0].(map[string]any)
					app["volumeMounts"] = []any{map[string]any{"name": "cache", "mountPath": "/cache"}}
					set(t, u, "on", "spec", "template", "metadata", "labels", "cache")
				})
			}},
		{name: "kubectl sets resources and overrides defaults", manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					app := containers(u)[0].(map[string]any)
					app["resources"] = map[string]any{"limits": map[string]any{"cpu": "500m"}}
					app["imagePullPolicy"] = "Always"
					set(t, u, "restarted", "spec", "template", "metadata", "annotations", "example.com/restartedAt")
				})
			}},
		{name: "legacy-app overrides a default", manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "legacy-app", func(u map[string]any) { set(t, u, int64(2), "spec", "revisionHistoryLimit") })
			}},
		{name: "kubectl changes Secret data", manifest: secretYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					set(t, u, map[string]any{"password": "eA==", "extra": "eQ=="}, "data")
				})
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), tt.manifest)
			git.SetAnnotations(tt.annotations)
			fluxApply(t, git)
			tt.change(t, git)
			d := newDetector(t)

			in := Input{Desired: git, Live: get(t, git)}
			before, err := d.Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			expectInProcessAgrees(g, t, in, before)
			g.Expect(before.Fields).NotTo(BeEmpty())
			survivors := []Field{}
			for _, f := range before.Fields {
				if !f.FluxReverts {
					survivors = append(survivors, f)
				}
			}

			fluxReconcile(t, git)
			in = Input{Desired: git, Live: get(t, git)}
			after, err := d.Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			expectInProcessAgrees(g, t, in, after)
			g.Expect(identities(after.Fields)).To(Equal(identities(survivors)))
		})
	}
}

// identity is what must survive Flux unchanged. The modifier may not:
// when two managers share a field, Flux's cleanup can fold away the one
// blamed, and managedFields times are too coarse to order writers within
// a second.
type identity struct {
	Pointer, ChangeType, LiveValue string
	FluxReverts                    bool
}

func identities(fields []Field) []identity {
	out := []identity{}
	for _, f := range fields {
		out = append(out, identity{Pointer: f.Pointer, ChangeType: string(f.ChangeType), LiveValue: f.LiveValue, FluxReverts: f.FluxReverts})
	}
	return out
}

// fluxReconcile applies obj with fluxcd/pkg/ssa as kustomize-controller
// v1.9.6's apply step configures it (ssa.ApplyOptions with its exclusion,
// IfNotPresent and force selectors, and its metadata cleanup).
func fluxReconcile(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	objs := []*unstructured.Unstructured{obj.DeepCopy()}
	if err := normalize.UnstructuredList(objs); err != nil {
		t.Fatal(err)
	}
	rm := ssa.NewResourceManager(k8sClient, nil, ssa.Owner{Field: DefaultFieldOwner, Group: "kustomize.toolkit.fluxcd.io"})
	opts := ssa.DefaultApplyOptions()
	opts.ExclusionSelector = map[string]string{
		"kustomize.toolkit.fluxcd.io/reconcile": "disabled",
		"kustomize.toolkit.fluxcd.io/ssa":       "Ignore",
	}
	opts.IfNotPresentSelector = map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}
	opts.ForceSelector = map[string]string{"kustomize.toolkit.fluxcd.io/force": "enabled"}
	opts.Cleanup = ssa.ApplyCleanupOptions{
		Annotations: []string{corev1.LastAppliedConfigAnnotation, "kustomize.toolkit.fluxcd.io/checksum", "fluxcd.io/sync-checksum"},
		Labels:      []string{"fluxcd.io/sync-gc-mark"},
		FieldManagers: []ssa.FieldManager{
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationApply},
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: "before-first-apply", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: DefaultFieldOwner, OperationType: metav1.ManagedFieldsOperationUpdate},
		},
		Exclusions: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Merge"},
	}
	if _, err := rm.Apply(context.Background(), objs[0], opts); err != nil {
		t.Fatalf("flux apply: %v", err)
	}
}

// partialApply server-side applies fields of like's object as manager, with
// forced ownership, as `kubectl apply --server-side --force-conflicts` does.
func partialApply(t *testing.T, like *unstructured.Unstructured, manager string, fields map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: fields}
	u.SetGroupVersionKind(like.GroupVersionKind())
	u.SetName(like.GetName())
	u.SetNamespace(like.GetNamespace())
	if err := k8sClient.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatalf("applying as %s: %v", manager, err)
	}
}
