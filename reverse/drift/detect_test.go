package drift

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDetect changes live objects the way people and controllers do and
// checks the drift, field by field, against what kustomize-controller
// v1.9.6 does to it (docs/flux-behaviour.md).
func TestDetect(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		// change drifts the live object; nil leaves it as Flux applied it.
		change func(t *testing.T, git *unstructured.Unstructured)
		want   []want
	}{
		{
			name:     "replicas changed by kubectl edit",
			manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, int64(5), "spec", "replicas") })
			},
			want: []want{{Pointer: "/spec/replicas", ChangeType: "Update", GitValue: "3", LiveValue: "5",
				FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"}},
		},
		{
			name:     "image changed by kubectl set",
			manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-set", func(u map[string]any) {
					set(t, containers(u)[0].(map[string]any), "ghcr.io/example/web:1.0.1", "image")
				})
			},
			want: []want{{Pointer: "/spec/template/spec/containers/0/image", ChangeType: "Update",
				GitValue: `"ghcr.io/example/web:1.0.0"`, LiveValue: `"ghcr.io/example/web:1.0.1"`,
				FluxReverts: true, Manager: "kubectl-set", Operation: "Update"}},
		},
		{
			name:     "annotation added by kubectl edit",
			manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					set(t, u, "payments", "metadata", "annotations", "example.com/team")
				})
			},
			want: []want{{Pointer: "/metadata/annotations/example.com~1team", ChangeType: "Add",
				LiveValue: `"payments"`, FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"}},
		},
		{
			name:     "ConfigMap key added by kubectl edit",
			manifest: configMapYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, "3", "data", "c") })
			},
			want: []want{{Pointer: "/data/c", ChangeType: "Add", LiveValue: `"3"`,
				FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"}},
		},
		{
			name:     "ConfigMap key added by another manager survives Flux",
			manifest: configMapYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "legacy-app", func(u map[string]any) { set(t, u, "3", "data", "c") })
			},
			want: []want{{Pointer: "/data/c", ChangeType: "Add", LiveValue: `"3"`,
				FluxReverts: false, Manager: "legacy-app", Operation: "Update"}},
		},
		{
			name:     "ConfigMap key changed by another manager is reverted",
			manifest: configMapYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "legacy-app", func(u map[string]any) { set(t, u, "10", "data", "a") })
			},
			want: []want{{Pointer: "/data/a", ChangeType: "Update", GitValue: `"1"`, LiveValue: `"10"`,
				FluxReverts: true, Manager: "legacy-app", Operation: "Update"}},
		},
		{
			name:     "ConfigMap key removed by kubectl edit",
			manifest: configMapYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					unstructured.RemoveNestedField(u, "data", "b")
				})
			},
			want: []want{{Pointer: "/data/b", ChangeType: "Remove", GitValue: `"2"`, FluxReverts: true}},
		},
		{
			name:     "Secret value changed is masked",
			manifest: secretYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, "c3dvcmRmaXNo", "data", "password") })
			},
			want: []want{{Pointer: "/data/password", ChangeType: "Update", GitValue: `"*** (after)"`,
				LiveValue: `"*** (before)"`, FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"}},
		},
		{
			name:     "Secret key added is masked",
			manifest: secretYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) { set(t, u, "dG9rZW4=", "data", "token") })
			},
			want: []want{{Pointer: "/data/token", ChangeType: "Add", LiveValue: `"***"`,
				FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"}},
		},
		{
			name:     "Secret key removed is masked",
			manifest: secretYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					set(t, u, map[string]any{"other": "eA=="}, "data")
				})
			},
			want: []want{
				{Pointer: "/data/other", ChangeType: "Add", LiveValue: `"***"`, FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"},
				{Pointer: "/data/password", ChangeType: "Remove", GitValue: `"***"`, FluxReverts: true},
			},
		},
		{
			// The element only Git has is numbered and valued as in Git;
			// the one only live has, as live.
			name:     "container replaced by kubectl edit",
			manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					c := containers(u)
					set(t, u, []any{c[0], map[string]any{"name": "debug", "image": "busybox"}}, "spec", "template", "spec", "containers")
				})
			},
			want: []want{
				{Pointer: "/spec/template/spec/containers/1", ChangeType: "Remove",
					GitValue: `{"image":"ghcr.io/example/proxy:2.0.0","name":"sidecar"}`, FluxReverts: true},
				{Pointer: "/spec/template/spec/containers/1", ChangeType: "Add",
					LiveValue: `{"image":"busybox","imagePullPolicy":"Always","name":"debug","resources":{},` +
						`"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}`,
					FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"},
			},
		},
		{
			name:     "Role rule added by kubectl edit",
			manifest: roleYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					rules, _, _ := unstructured.NestedSlice(u, "rules")
					rules = append(rules, map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get"}})
					set(t, u, rules, "rules")
				})
			},
			want: []want{{Pointer: "/rules/1", ChangeType: "Add",
				LiveValue:   `{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}`,
				FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"}},
		},
		{name: "clean Role", manifest: roleYAML, want: []want{}},
		{name: "clean Deployment", manifest: deploymentYAML, want: []want{}},
		{name: "clean Service", manifest: serviceYAML, want: []want{}},
		{name: "clean ConfigMap", manifest: configMapYAML, want: []want{}},
		{name: "clean Secret", manifest: secretYAML, want: []want{}},
		{
			name:     "replicas set by the HPA's manager",
			manifest: autoscaledYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kube-controller-manager", func(u map[string]any) { set(t, u, int64(7), "spec", "replicas") })
			},
			want: []want{},
		},
		{
			name:     "status written by a controller",
			manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				live := get(t, git)
				set(t, live.Object, int64(3), "status", "replicas")
				set(t, live.Object, int64(7), "status", "observedGeneration")
				if err := k8sClient.Status().Update(context.Background(), live, client.FieldOwner("some-controller")); err != nil {
					t.Fatal(err)
				}
			},
			want: []want{},
		},
		{
			name:     "env var added to the second container",
			manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					set(t, containers(u)[1].(map[string]any), []any{map[string]any{"name": "DEBUG", "value": "1"}}, "env")
				})
			},
			want: []want{{Pointer: "/spec/template/spec/containers/1/env/0", ChangeType: "Add",
				LiveValue: `{"name":"DEBUG","value":"1"}`, FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"}},
		},
		{
			name:     "env var added to a container reordered live",
			manifest: deploymentYAML,
			change: func(t *testing.T, git *unstructured.Unstructured) {
				edit(t, git, "kubectl-edit", func(u map[string]any) {
					c := containers(u)
					app := c[0].(map[string]any)
					env := app["env"].([]any)
					app["env"] = append(env, map[string]any{"name": "DEBUG", "value": "1"})
					set(t, u, []any{c[1], app}, "spec", "template", "spec", "containers")
				})
			},
			want: []want{{Pointer: "/spec/template/spec/containers/1/env/1", ChangeType: "Add",
				LiveValue: `{"name":"DEBUG","value":"1"}`, FluxReverts: true, Manager: "kubectl-edit", Operation: "Update"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			git := object(t, newNamespace(t), tt.manifest)
			fluxApply(t, git)
			if tt.change != nil {
				tt.change(t, git)
			}
			d := newDetector(t)
			in := Input{Desired: git, Live: get(t, git)}
			res, err := d.Detect(context.Background(), in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Skipped).To(BeEmpty())
			g.Expect(got(g, res.Fields)).To(Equal(tt.want))
			expectInProcessAgrees(g, t, in, res)
			// The resync's prefilter may only skip what really is clean.
			if len(tt.want) > 0 {
				g.Expect(d.Unchanged(in)).To(BeFalse())
			}
		})
	}
}
