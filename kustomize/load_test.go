package kustomize

import (
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
)

func TestLoadKustomization(t *testing.T) {
	const multi = "testdata/cluster-multi-doc/flux-kustomization.yaml"
	tests := []struct {
		name     string
		load     func() (string, error)
		wantName string
		wantErr  string
	}{
		{"single document", func() (string, error) {
			ks, err := LoadKustomization("testdata/flux-spec/flux-kustomization.yaml")
			return name(ks, err)
		}, "web", ""},
		{"several Kustomizations are ambiguous, and named", func() (string, error) {
			return name(LoadKustomization(multi))
		}, "", "holds flux-system/infra-configs, flux-system/apps; name one as FILE#NAME or FILE#NAMESPACE/NAME, e.g. " + multi + "#flux-system/infra-configs"},
		{"several Kustomizations: the one whose spec.path is the built directory", func() (string, error) {
			return name(SelectKustomizationForPath(multi, "apps"))
		}, "apps", ""},
		{"spec.path matched at the end of a directory below the repository root", func() (string, error) {
			return name(SelectKustomizationForPath(multi, "kustomize/testdata/cluster-multi-doc/infrastructure"))
		}, "infra-configs", ""},
		{"no spec.path names the directory: refused, naming each path", func() (string, error) {
			return name(SelectKustomizationForPath(multi, "apps/podinfo"))
		}, "", "holds flux-system/infra-configs (path infrastructure), flux-system/apps (path apps); none has spec.path apps/podinfo; name one as FILE#NAME or FILE#NAMESPACE/NAME"},
		{"one Kustomization is taken whatever its path, as the directory overrides it", func() (string, error) {
			return name(SelectKustomizationForPath("testdata/flux-spec/flux-kustomization.yaml", "elsewhere"))
		}, "web", ""},
		{"select a later one by name", func() (string, error) {
			ks, err := SelectKustomization(multi, "apps")
			return name(ks, err)
		}, "apps", ""},
		{"select by namespace and name", func() (string, error) {
			return name(SelectKustomization(multi, "flux-system/infra-configs"))
		}, "infra-configs", ""},
		{"a missing name lists what the file holds", func() (string, error) {
			return name(SelectKustomization(multi, "flux-system/tenants"))
		}, "", "no Flux Kustomization flux-system/tenants; it holds flux-system/infra-configs, flux-system/apps"},
		{"kustomize's own kustomization.yaml is not a Flux Kustomization", func() (string, error) {
			return name(LoadKustomization("testdata/cluster-multi-doc/apps/kustomization.yaml"))
		}, "", "no Kustomization of kustomize.toolkit.fluxcd.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := tt.load()
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.wantName))
		})
	}
	all, err := LoadKustomizations(multi)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(all[1].Spec.Patches).To(HaveLen(1))
}

func name[T interface{ GetName() string }](ks T, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return ks.GetName(), nil
}

func TestMatchSpecPath(t *testing.T) {
	ks := func(name, path string) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{}
		k.Name, k.Spec.Path = name, path
		return k
	}
	fleet := []*kustomizev1.Kustomization{
		ks("root", ""), ks("apps", "./apps"), ks("prod", "./apps/prod"), ks("prod-again", "apps/prod/"), ks("infra", "/infrastructure"),
	}
	tests := []struct {
		name string
		dir  string
		want []string
	}{
		{"./ prefix and trailing slash ignored", "apps", []string{"apps"}},
		{"exact match wins over a shorter tail", "apps/prod", []string{"prod", "prod-again"}},
		{"a leading / is the source root", "infrastructure", []string{"infra"}},
		{"the root only matches exactly", ".", []string{"root"}},
		{"tail of a deeper directory", "fleet/apps/prod", []string{"prod", "prod-again"}},
		{"tail on whole directories only", "myapps", nil},
		{"no match", "tenants", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, k := range MatchSpecPath(fleet, tt.dir) {
				got = append(got, k.Name)
			}
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

func TestCleanSpecPath(t *testing.T) {
	for in, want := range map[string]string{
		"": ".", "./": ".", "/": ".", ".": ".", "./apps/prod": "apps/prod", "apps/prod/": "apps/prod",
		"/apps//prod": "apps/prod", "./apps/../infra": "infra",
	} {
		NewWithT(t).Expect(CleanSpecPath(in)).To(Equal(want), in)
	}
}
