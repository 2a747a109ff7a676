package kustomize

import (
	"testing"

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
		}, "", "holds flux-system/infra-configs, flux-system/apps"},
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
