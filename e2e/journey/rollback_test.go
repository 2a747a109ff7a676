package journey

import (
	"context"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// deployment renders a Deployment of one container for a fixture's tree.
func deployment(name, image string, replicas int, containerExtra string) string {
	return "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\nspec:\n" +
		"  replicas: " + strconv.Itoa(replicas) + "\n  selector:\n    matchLabels:\n      app: " + name + "\n" +
		"  template:\n    metadata:\n      labels:\n        app: " + name + "\n    spec:\n      containers:\n" +
		"        - name: app\n          image: " + image + "\n" + containerExtra
}

// headOf returns the commit a branch of repo points at, as ls-remote sees it.
func headOf(t *testing.T, repo, branch string) string {
	out := gitCLI(t, "", "ls-remote", "--heads", gitURL(repo), branch)
	hash, _, _ := strings.Cut(out, "\t")
	return hash
}

// TestImageRollbackIsAHighAlertOnAPrefilledBranch (scenario 2): the real
// `kubectl set image` rolls an image back. reflux raises a high Alert with a
// Warning event and pushes a prefilled branch for a decision; nothing is
// merged, and the hold keeps Flux from rolling the image forward again.
func TestImageRollbackIsAHighAlertOnAPrefilledBranch(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, "rollback", fixtureOptions{files: map[string]string{
		"kustomization.yaml": kustomizationYAML + "  - web.yaml\n",
		"web.yaml":           deployment("web", "ghcr.io/example/web:2.4.0", 2, ""),
	}})
	ks := f.only()
	_, err := env.KubectlAs(ctx, alice, "-n", f.name, "set", "image", "deployment/web", "app=ghcr.io/example/web:2.3.9")
	g.Expect(err).NotTo(HaveOccurred())

	const pointer = "/spec/template/spec/containers/0/image"
	rec := f.waitRecord(g, "Deployment", "web", proposed)
	fl, err := field(rec, pointer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fl.Action).To(Equal(refluxv1.AlertAction))
	g.Expect(fl.Severity).To(Equal(refluxv1.SeverityHigh))
	g.Expect(fl.Modifier.Manager).To(Equal("kubectl-set"))
	g.Expect(fl.Origin.File).To(Equal("web.yaml"))
	ev := f.event(g, "DriftDetected", "web")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-severity", "high"))

	// The prefilled branch rolls web.yaml back, and waits for a person.
	dir := cloneBranch(t, f.repo, rec.Status.Branch)
	_, added, removed := diffLines(gitCLI(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(added).To(Equal([]string{"          image: ghcr.io/example/web:2.3.9"}))
	g.Expect(removed).To(Equal([]string{"          image: ghcr.io/example/web:2.4.0"}))
	g.Expect(headOf(t, f.repo, "main")).To(Equal(f.head), "nothing is merged")
	f.consistent(t, g)

	// The hold keeps Flux from fighting the rollback.
	g.Expect(isHeld(f.get(g, "web", &appsv1.Deployment{}))).To(BeTrue())
	f.reconcile(g, ks.Name)
	d := f.get(g, "web", &appsv1.Deployment{}).(*appsv1.Deployment)
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/example/web:2.3.9"))
	g.Expect(f.condition(g, ks.Name, "Ready")).To(HavePrefix("True/"), "Flux reconciled, and left the held object alone")
}
