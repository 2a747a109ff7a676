package journey

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// TestSharedBaseWritesToTheDriftedOverlay (scenario 5): a base rendered by
// two overlays is not edited for the drift of one; the write lands in the
// drifted overlay only.
func TestSharedBaseWritesToTheDriftedOverlay(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	overlay := func(prefix string) string {
		return fixture.Kustomization("../../base") + "namePrefix: " + prefix + "-\n"
	}
	f := fixture.NewApp(t, env, "shared", fixture.AppOptions{
		Files: map[string]string{
			"base/kustomization.yaml":        fixture.Kustomization("settings.yaml"),
			"base/settings.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  LOG_LEVEL: info\n",
			"overlays/eu/kustomization.yaml": overlay("eu"),
			"overlays/us/kustomization.yaml": overlay("us"),
		},
		Paths: map[string]string{"shared-eu": "./overlays/eu", "shared-us": "./overlays/us"},
	})
	f.AddKey(g, alice.Client, "eu-settings", "TRACING", "on")

	rec := f.WaitRecord(g, "ConfigMap", "eu-settings", fixture.Pushed)
	g.Expect(rec.Spec.Kustomization.Name).To(Equal("shared-eu"))
	g.Expect(rec.Status.Branch).To(ContainSubstring("shared-eu"))
	dir := fixture.CloneBranch(t, env, f.Repo, rec.Status.Branch)
	changed := strings.Fields(fixture.Git(t, dir, "diff", "--name-only", "origin/main", "HEAD"))
	g.Expect(changed).NotTo(BeEmpty())
	for _, p := range changed {
		g.Expect(p).To(HavePrefix("overlays/eu/"), "the shared base and the other overlay are untouched")
	}
	g.Expect(fixture.Git(t, dir, "diff", "origin/main", "HEAD")).To(ContainSubstring("TRACING"))
	f.Consistent(t, g)
	g.Expect(f.Records(g, "ConfigMap", "us-settings")).To(BeEmpty())
	g.Expect(f.Get(g, "us-settings", &corev1.ConfigMap{}).(*corev1.ConfigMap).Data).NotTo(HaveKey("TRACING"))
	g.Expect(f.Condition(g, "shared-us", refluxv1.DriftedCondition)).To(HavePrefix("False/" + refluxv1.NoDriftReason))
}
