package cli

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse/desired"
)

// TestManagerRenderBudgetFlags: the render budgets are flags whose
// defaults are the libraries' own, so the README's numbers are the ones
// that run.
func TestManagerRenderBudgetFlags(t *testing.T) {
	g := NewWithT(t)
	fs := NewManagerCommand().Flags()
	for flag, want := range map[string]string{
		"render-timeout":       desired.DefaultBuildTimeout.String(),
		"render-max-file-size": "16777216",
		"render-max-size":      "67108864",
	} {
		f := fs.Lookup(flag)
		g.Expect(f).NotTo(BeNil(), flag)
		g.Expect(f.DefValue).To(Equal(want), flag)
	}
	g.Expect(desired.DefaultBuildTimeout).To(Equal(10 * time.Minute))
	g.Expect(int64(kustomize.DefaultMaxFileSize)).To(Equal(int64(16 << 20)))
	g.Expect(int64(kustomize.DefaultMaxLoadSize)).To(Equal(int64(64 << 20)))
}
