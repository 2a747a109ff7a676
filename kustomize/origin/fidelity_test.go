package origin

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestFidelity covers the construct classes issue 12 found mapped wrongly
// or refused without cause on real repositories, one row per class.
func TestFidelity(t *testing.T) {
	type want struct {
		pos    string // FILE:LINE:COL of the origin
		kind   Kind
		reason Reason // set for a refusal
		edit   string // FILE:LINE:COL to edit instead, for a refusal
	}
	tests := []struct {
		name, tree, flux string
		ref              ObjectRef
		pointer          string
		want             want
	}{
		{
			name: "a later Kustomization of a multi-document file maps to its own spec.patches",
			tree: "cluster-multi-doc", flux: "flux-kustomization.yaml#apps",
			ref: ObjectRef{Kind: "Deployment", Name: "podinfo"}, pointer: "/spec/replicas",
			want: want{pos: "flux-kustomization.yaml:59:21", kind: KindKustomizationSpec},
		},
		{
			name: "the first Kustomization of the same file keeps its own patches",
			tree: "cluster-multi-doc", flux: "flux-kustomization.yaml#infra-configs",
			ref: ObjectRef{Kind: "ConfigMap", Name: "cluster-settings"}, pointer: "/data/region",
			want: want{pos: "flux-kustomization.yaml:33:19", kind: KindKustomizationSpec},
		},
		{
			name: "an env-file key without = has the empty value, declared on its line",
			tree: "env-file-bare-keys",
			ref:  ObjectRef{Kind: "ConfigMap", Namespace: "checkout", Name: "checkout-env"}, pointer: "/data/FEATURE_FAST_CHECKOUT",
			want: want{pos: "checkout.env:5:1", kind: KindGeneratorEnv},
		},
		{
			name: "patchesJSON6902 as kustomize's docs spell it",
			tree: "case-insensitive-keys", flux: "flux-kustomization.yaml",
			ref: ObjectRef{Kind: "Deployment", Namespace: "jobs", Name: "batch-worker"}, pointer: "/spec/template/spec/containers/0/args/0",
			want: want{pos: "overlay/queue-patch.yaml:3:10", kind: KindPatch},
		},
		{
			name: "Images and NewTag in any case",
			tree: "case-insensitive-keys", flux: "flux-kustomization.yaml",
			ref: ObjectRef{Kind: "Deployment", Namespace: "jobs", Name: "batch-worker"}, pointer: "/spec/template/spec/containers/0/image",
			want: want{pos: "overlay/kustomization.yaml:20:13", kind: KindImages},
		},
		{
			name: "a name without hash is declared by the generator's name line",
			tree: "generator-no-hash",
			ref:  ObjectRef{Kind: "ConfigMap", Namespace: "monitoring", Name: "alertmanager-templates"}, pointer: "/metadata/name",
			want: want{pos: "kustomization.yaml:15:11", kind: KindGeneratorName},
		},
		{
			name: "a global disableNameSuffixHash wins over a generator's false",
			tree: "generator-no-hash",
			ref:  ObjectRef{Kind: "ConfigMap", Namespace: "monitoring", Name: "prometheus-rules"}, pointer: "/metadata/name",
			want: want{pos: "kustomization.yaml:18:11", kind: KindGeneratorName},
		},
		{
			name: "Flux's origin annotation on a kustomization without resources is build metadata",
			tree: "generator-no-hash",
			ref:  ObjectRef{Kind: "Secret", Namespace: "monitoring", Name: "alertmanager-webhook"}, pointer: originAnnotationPtr,
			want: want{reason: ReasonBuildMetadata},
		},
		{
			name: "a hash-suffixed name names the generator's name line",
			tree: "env-file-bare-keys",
			ref:  ObjectRef{Kind: "Deployment", Namespace: "checkout", Name: "checkout"}, pointer: "/spec/template/spec/containers/0/envFrom/1/secretRef/name",
			want: want{reason: ReasonHashSuffix, edit: "kustomization.yaml:11:11"},
		},
		{
			name: "the local part of a tree with a remote base maps",
			tree: "remote-base", flux: "flux-kustomization.yaml",
			ref: ObjectRef{Kind: "Deployment", Namespace: "cache", Name: "redis-exporter"}, pointer: "/spec/template/spec/containers/0/resources/limits/memory",
			want: want{pos: "overlay/exporter-resources.yaml:12:23", kind: KindPatch},
		},
		{
			name: "a builtin transformer's label is refused as a plugin, naming transformers",
			tree: "helm-and-plugins", flux: "flux-kustomization.yaml",
			ref: ObjectRef{Kind: "IngressClass", Name: "public"}, pointer: "/metadata/labels/team",
			want: want{reason: ReasonPlugin, edit: "app/kustomization.yaml:16:1"},
		},
		{
			name: "the rest of a tree with helmCharts maps",
			tree: "helm-and-plugins", flux: "flux-kustomization.yaml",
			ref: ObjectRef{Kind: "IngressClass", Name: "public"}, pointer: "/spec/controller",
			want: want{pos: "app/ingress-class.yaml:6:15", kind: KindResource},
		},
		{
			name: "a RoleBinding subject named default gets the namespace line",
			tree: "rolebinding-subjects",
			ref:  ObjectRef{Kind: "RoleBinding", Namespace: "apps", Name: "app-read"}, pointer: "/subjects/2/namespace",
			want: want{pos: "kustomization.yaml:5:12", kind: KindNamespace},
		},
		{
			name: "a subject named default has its own namespace overwritten",
			tree: "rolebinding-subjects",
			ref:  ObjectRef{Kind: "RoleBinding", Namespace: "apps", Name: "app-read"}, pointer: "/subjects/3/namespace",
			want: want{pos: "kustomization.yaml:5:12", kind: KindNamespace},
		},
		{
			name: "any kind of subject named default, as kustomize does",
			tree: "rolebinding-subjects",
			ref:  ObjectRef{Kind: "RoleBinding", Namespace: "apps", Name: "app-read"}, pointer: "/subjects/6/namespace",
			want: want{pos: "kustomization.yaml:5:12", kind: KindNamespace},
		},
		{
			name: "a ServiceAccount subject in the account's old namespace moves with it",
			tree: "rolebinding-subjects",
			ref:  ObjectRef{Kind: "RoleBinding", Namespace: "apps", Name: "app-read"}, pointer: "/subjects/0/namespace",
			want: want{pos: "kustomization.yaml:5:12", kind: KindNamespace},
		},
		{
			name: "a ClusterRoleBinding's subjects too",
			tree: "rolebinding-subjects",
			ref:  ObjectRef{Kind: "ClusterRoleBinding", Name: "app-nodes"}, pointer: "/subjects/0/namespace",
			want: want{pos: "kustomization.yaml:5:12", kind: KindNamespace},
		},
		{
			name: "a subject of another account keeps its own namespace",
			tree: "rolebinding-subjects",
			ref:  ObjectRef{Kind: "RoleBinding", Namespace: "apps", Name: "app-read"}, pointer: "/subjects/4/namespace",
			want: want{pos: "rbac.yaml:22:16", kind: KindResource},
		},
		{
			name: "two subjects of one name are told apart by position",
			tree: "rolebinding-subjects",
			ref:  ObjectRef{Kind: "RoleBinding", Namespace: "apps", Name: "app-read"}, pointer: "/subjects/3/kind",
			want: want{pos: "rbac.yaml:17:11", kind: KindResource},
		},
		{
			name: "Flux's targetNamespace sets a subject named default",
			tree: "rolebinding-subjects", flux: "flux-kustomization-target.yaml",
			ref: ObjectRef{Kind: "RoleBinding", Namespace: "tenant-a", Name: "app-read-target"}, pointer: "/subjects/2/namespace",
			want: want{pos: "flux-kustomization-target.yaml:13:20", kind: KindKustomizationSpec},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			idx := buildNamed(t, tt.tree, tt.flux)
			g.Expect(idx.ModelErr).NotTo(HaveOccurred())
			got, err := idx.Lookup(tt.ref, tt.pointer)
			if tt.want.reason != "" {
				var refused *RefusedError
				g.Expect(errors.As(err, &refused)).To(BeTrue(), "want a refusal, got %v", err)
				g.Expect(refused.Reason).To(Equal(tt.want.reason))
				g.Expect(refused.Error()).To(ContainSubstring(tt.want.reason.Why()))
				if tt.want.edit == "" {
					g.Expect(refused.Edit).To(BeNil())
					return
				}
				g.Expect(refused.Edit).NotTo(BeNil())
				g.Expect(refused.Edit.Position()).To(Equal(tt.want.edit))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(Layer{File: got.File, Line: got.Line, Column: got.Column}.Position()).To(Equal(tt.want.pos))
			g.Expect(got.Kind).To(Equal(tt.want.kind))
		})
	}
}

// TestUnrenderedObjects: an object a remote base or a Helm chart would
// render is refused with the declaration that pulls it in, never fetched.
func TestUnrenderedObjects(t *testing.T) {
	tests := []struct {
		tree   string
		ref    ObjectRef
		reason Reason
		edit   string
		via    string
	}{
		{"remote-base", ObjectRef{Kind: "StatefulSet", Namespace: "cache", Name: "redis"}, ReasonRemoteBase, "overlay/kustomization.yaml:5:5", "resources[0]"},
		{"helm-and-plugins", ObjectRef{Kind: "Deployment", Namespace: "ingress", Name: "ingress-nginx-controller"}, ReasonHelmChart, "app/kustomization.yaml:6:1", "helmCharts"},
	}
	for _, tt := range tests {
		t.Run(tt.tree, func(t *testing.T) {
			g := NewWithT(t)
			idx := buildNamed(t, tt.tree, "flux-kustomization.yaml")
			_, err := idx.Lookup(tt.ref, "/spec/replicas")
			g.Expect(err).To(MatchError(ErrObjectNotFound))
			var refused *RefusedError
			g.Expect(errors.As(err, &refused)).To(BeTrue())
			g.Expect(refused.Reason).To(Equal(tt.reason))
			g.Expect(refused.Edit.Position()).To(Equal(tt.edit))
			g.Expect(refused.Edit.Via).To(Equal(tt.via))
		})
	}
}

// TestNotRenderedNamesTheClosest: a wrong namespace is the usual mistake.
func TestNotRenderedNamesTheClosest(t *testing.T) {
	g := NewWithT(t)
	idx := buildNamed(t, "env-file-bare-keys", "")
	_, err := idx.Resolve(ObjectRef{Kind: "Deployment", Namespace: "default", Name: "checkout"})
	g.Expect(err).To(MatchError(ErrObjectNotFound))
	g.Expect(err.Error()).To(HaveSuffix("closest rendered: Deployment.apps/checkout/checkout"))
	_, err = idx.Resolve(ObjectRef{Kind: "CronJob", Namespace: "batch", Name: "nightly"})
	g.Expect(err).To(MatchError(ErrObjectNotFound))
	g.Expect(err.Error()).NotTo(ContainSubstring("closest"))
}

// buildNamed builds a corpus case; flux is FILE or FILE#NAME for one
// Kustomization of a multi-document file.
func buildNamed(t *testing.T, tree, flux string) *Index {
	t.Helper()
	file, name, _ := strings.Cut(flux, "#")
	if file != "" {
		file = "../testdata/" + tree + "/" + file
	}
	for _, tc := range loadCases(t, "../testdata/"+tree, file) {
		if name == "" || tc.opts.Kustomization.Name == name {
			return buildCase(t, tree, file, tc)
		}
	}
	t.Fatalf("no case %s %s", tree, flux)
	return nil
}
