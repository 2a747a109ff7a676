package testenv

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestOverrideDir(t *testing.T) {
	for _, tc := range []struct {
		name, option, env, want string
	}{
		{name: "default is the bin dir", want: "/elsewhere/bin"},
		{name: "the variable names another build", env: "/cache/flux-latest", want: "/cache/flux-latest"},
		{name: "a relative variable is the repository's", env: "bin/flux-latest", want: "/repo/bin/flux-latest"},
		{name: "the option wins over the variable", option: "/opt/flux", env: "bin/flux-latest", want: "/opt/flux"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(overrideDir(tc.option, tc.env, "/repo", "/elsewhere/bin")).To(Equal(tc.want))
		})
	}
}

func TestHelmBinDir(t *testing.T) {
	g := NewWithT(t)
	flux, bin := t.TempDir(), t.TempDir()
	g.Expect(helmBinDir(flux, bin)).To(Equal(bin), "a Flux directory without helm-controller")
	g.Expect(os.WriteFile(filepath.Join(flux, binHelmController), nil, 0o755)).To(Succeed())
	g.Expect(helmBinDir(flux, bin)).To(Equal(flux), "a Flux directory with its own helm-controller")
}
