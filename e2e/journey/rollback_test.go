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
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// deployment renders a Deployment of one container for a fixture's tree.
func deployment(name, image string, replicas int, containerExtra string) string {
	return "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\nspec:\n" +
		"  replicas: " + strconv.Itoa(replicas) + "\n  selector:\n    matchLabels:\n      app: " + name + "\n" +
		"  template:\n    metadata:\n      labels:\n        app: " + name + "\n    spec:\n      containers:\n" +
		"        - name: app\n          image: " + image + "\n" + containerExtra
}

// workerYAML is the Deployment the hotfix journeys edit.
var workerYAML = deployment("worker", "ghcr.io/example/worker:1.8.0", 1, "")

// headOf returns the commit a branch of repo points at, as ls-remote sees it.
func headOf(t *testing.T, repo, branch string) string {
	out := fixture.Git(t, "", "ls-remote", "--heads", fixture.GitURL(env, repo), branch)
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
	web := deployment("web", "ghcr.io/example/web:2.4.0", 2, "")
	f := fixture.NewApp(t, env, "rollback", fixture.AppOptions{Files: fixture.OneFile("web.yaml", web)})
	ks := f.Kustomization()
	_, err := env.KubectlAs(ctx, alice.User, "-n", f.Name, "set", "image", "deployment/web", "app=ghcr.io/example/web:2.3.9")
	g.Expect(err).NotTo(HaveOccurred())

	const pointer = "/spec/template/spec/containers/0/image"
	rec := f.WaitRecord(g, "Deployment", "web", fixture.Pushed)
	fl, err := fixture.Field(rec, pointer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fl.Action).To(Equal(refluxv1.AlertAction))
	g.Expect(fl.Severity).To(Equal(refluxv1.SeverityHigh))
	g.Expect(fl.Modifier.Manager).To(Equal("kubectl-set"))
	g.Expect(fl.Origin.File).To(Equal("web.yaml"))
	ev := f.Event(g, "DriftDetected", "web")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(ev.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reflux-severity", "high"))

	// The prefilled branch rolls web.yaml back, and waits for a person.
	dir := fixture.CloneBranch(t, env, f.Repo, rec.Status.Branch)
	_, added, removed := fixture.DiffLines(fixture.Git(t, dir, "diff", "-U0", "origin/main", "HEAD"))
	g.Expect(added).To(Equal([]string{"          image: ghcr.io/example/web:2.3.9"}))
	g.Expect(removed).To(Equal([]string{"          image: ghcr.io/example/web:2.4.0"}))
	g.Expect(headOf(t, f.Repo, "main")).To(Equal(f.Head), "nothing is merged")
	f.Consistent(t, g)

	// The hold keeps Flux from fighting the rollback.
	g.Expect(fixture.Held(f.Get(g, "web", &appsv1.Deployment{}))).To(BeTrue())
	f.Reconcile(g, ks.Name)
	d := f.Get(g, "web", &appsv1.Deployment{}).(*appsv1.Deployment)
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/example/web:2.3.9"))
	g.Expect(f.Condition(g, ks.Name, "Ready")).To(HavePrefix("True/"), "Flux reconciled, and left the held object alone")
}
