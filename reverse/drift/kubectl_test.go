package drift

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDetectKubectlWriters covers the kubectl field managers Flux strips
// (docs/flux-behaviour.md, TestFieldManagersAfterForcedReconcile): whoever
// writes as kubectl*, changed and added keys are both reverted.
func TestDetectKubectlWriters(t *testing.T) {
	changedAndAdded := func(manager, op string) []want {
		return []want{
			{Pointer: "/data/a", ChangeType: "Update", GitValue: `"1"`, LiveValue: `"10"`, FluxReverts: true, Manager: manager, Operation: op},
			{Pointer: "/data/c", ChangeType: "Add", LiveValue: `"3"`, FluxReverts: true, Manager: manager, Operation: op},
		}
	}
	tests := []struct {
		name   string
		change func(t *testing.T, git *unstructured.Unstructured)
		want   []want
	}{
		{
			// kubectl apply (client-side) also writes its last-applied
			// annotation, which Flux deletes and which is never drift.
			name: "kubectl client-side apply",
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-client-side-apply", func(u map[string]any) {
					set(t, u, "10", "data", "a")
					set(t, u, "3", "data", "c")
					last, _ := json.Marshal(map[string]any{"data": map[string]any{"a": "10", "c": "3"}})
					set(t, u, string(last), "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
				})
			},
			want: changedAndAdded("kubectl-client-side-apply", "Update"),
		},
		{
			name: "kubectl server-side apply with force",
			change: func(t *testing.T, git *unstructured.Unstructured) {
				patch := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": git.GetName(), "namespace": git.GetNamespace()},
					"data":     map[string]any{"a": "10", "c": "3"},
				}}
				if err := k8sClient.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(patch),
					client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
					t.Fatal(err)
				}
			},
			want: changedAndAdded("kubectl", "Apply"),
		},
		{
			name: "labels changed and added by kubectl edit",
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					set(t, u, "blue", "metadata", "labels", "tier")
					set(t, u, "yes", "metadata", "labels", "hotfix")
				})
			},
			want: []want{
				{Pointer: "/metadata/labels/hotfix", ChangeType: "Add", LiveValue: `"yes"`, FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"},
				{Pointer: "/metadata/labels/tier", ChangeType: "Update", GitValue: `"green"`, LiveValue: `"blue"`, FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), configMapYAML)
			labels := git.GetLabels()
			labels["tier"] = "green"
			git.SetLabels(labels)
			fluxApply(t, git)
			tt.change(t, git)
			in := Input{Desired: git, Live: get(t, git)}
			res, err := newDetector(t).Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			expectInProcessAgrees(g, t, in, res)
			g.Expect(got(g, res.Fields)).To(Equal(tt.want))
		})
	}
}

// TestDetectDeleted checks that a live object deleted since the event is
// stale, not an immutable-field refusal.
func TestDetectDeleted(t *testing.T) {
	g := NewWithT(t)
	git := object(t, newNamespace(t), configMapYAML)
	fluxApply(t, git)
	live := get(t, git)
	g.Expect(k8sClient.Delete(context.Background(), live.DeepCopy())).To(Succeed())
	_, err := newDetector(t).Detect(context.Background(), Input{Desired: git, Live: live})
	g.Expect(errors.Is(err, ErrStale)).To(BeTrue(), "got %v", err)
}

// TestDetectNeverLeaksSecrets drifts a Secret every way at once, with Git
// writing data (base64) rather than stringData, and checks that no value,
// encoded or not, reaches the result.
func TestDetectNeverLeaksSecrets(t *testing.T) {
	g := NewWithT(t)
	git := object(t, newNamespace(t), `
apiVersion: v1
kind: Secret
metadata:
  name: creds
data:
  password: aHVudGVyMg==
  token: dG9rZW4tdmFsdWU=
`)
	fluxApply(t, git)
	edit(t, git, "kubectl-client-side-apply", func(u map[string]any) {
		set(t, u, map[string]any{"password": "c3dvcmRmaXNo", "apikey": "a2V5LXZhbHVl"}, "data")
		last, _ := json.Marshal(u["data"])
		set(t, u, string(last), "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
	})
	in := Input{Desired: git, Live: get(t, git)}
	res, err := newDetector(t).Detect(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	expectInProcessAgrees(g, t, in, res)
	g.Expect(res.Fields).To(HaveLen(3))
	out, err := json.Marshal(res)
	g.Expect(err).NotTo(HaveOccurred())
	for _, secret := range []string{"aHVudGVyMg", "hunter2", "dG9rZW4", "token-value", "c3dvcmRmaXNo", "swordfish", "a2V5LXZhbHVl", "key-value"} {
		g.Expect(string(out)).NotTo(ContainSubstring(secret))
	}
}
