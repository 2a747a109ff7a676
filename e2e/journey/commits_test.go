package journey

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// commits is how many revisions arrive while reflux's renders are held
// back (its hidden --render-gate-file), so that every edit is made while
// a render it would need is still to be built, however long the commits
// take on a loaded machine: a render that merely took long once landed
// mid-loop under load, where three commits took longer than it.
const commits = 3

// TestEditsWhileCommitsArriveAreRecordedAtOnce (issue 20 §1, at a size CI
// fits): revisions arrive while reflux's renders are held back, as those
// of a tree of tens of thousands of objects take minutes, and people edit
// objects between the commits. Every edit is recorded before any render
// lands: at once against the older render when its object's file did not
// change, else as Pending. reflux renders the newest revision, not each
// in turn, and once that render lands every record is complete.
func TestEditsWhileCommitsArriveAreRecordedAtOnce(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	gate := filepath.Join(t.TempDir(), "hold-renders")
	r := fixture.StartReflux(t, env, fixture.Options{Name: "reflux-commits", Selector: shardKey + "=commits",
		Args: []string{"--render-gate-file=" + gate}})
	files := map[string]string{"kustomization.yaml": fixture.Kustomization("steady.yaml", "moving.yaml"),
		"steady.yaml": flagsOf("steady", commits, ""), "moving.yaml": flagsOf("moving", commits, "0")}
	f := fixture.NewApp(t, env, "commits", fixture.AppOptions{Labels: map[string]string{shardKey: "commits"}, Files: files})
	ks := f.Kustomization()
	builds := func() float64 { return renderBuilds(g, r, ks) }
	g.Expect(builds()).To(BeNumerically("==", 1), "the first revision is rendered")
	// From now on every render waits before it builds, until the gate
	// file goes.
	g.Expect(os.WriteFile(gate, nil, 0o600)).To(Succeed())

	dir := fixture.CloneBranch(t, env, f.Repo, "main")
	for i := range commits {
		// A commit changes every object of moving.yaml; Flux applies it at
		// once, while reflux is still rendering an earlier one.
		g.Expect(os.WriteFile(filepath.Join(dir, "moving.yaml"), []byte(flagsOf("moving", commits, fmt.Sprint(i+1))), 0o600)).
			To(Succeed())
		fixture.Git(t, dir, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qam", fmt.Sprintf("Revision %d", i+1))
		fixture.Git(t, dir, "push", "-q", "origin", "main")
		head := fixture.Git(t, dir, "rev-parse", "HEAD")
		g.Expect(env.Reconcile(ctx, f.Source)).To(Succeed())
		f.Reconcile(g, ks.Name)
		g.Expect(ks.Status.LastAppliedRevision).To(HaveSuffix(head))

		steady, moving := fmt.Sprintf("steady-%d", i), fmt.Sprintf("moving-%d", i)
		// steady's file never changes: each edit is evaluated at once,
		// against an older render. reflux learns of the revision Flux
		// applied from the Kustomization's status, a moment after Flux
		// wrote it; the record of each edit names the revision it was
		// evaluated as of, so edits go on until it is the applied one.
		edits := 0
		g.Eventually(func() string {
			edits++
			key := fmt.Sprintf("HOTFIX_%d", edits)
			f.AddKey(g, alice.Client, steady, key, "on")
			return f.WaitRecord(g, "ConfigMap", steady, fixture.HasField("/data/"+key)).Spec.Revision
		}, fixture.Timeout, fixture.Interval).Should(Equal(ks.Status.LastAppliedRevision))
		// moving's file changed in a revision no render describes yet.
		f.AddKey(g, alice.Client, moving, "HOTFIX", "on")
		rec := f.WaitRecord(g, "ConfigMap", moving, fixture.InState(refluxv1.DriftPending))
		g.Expect(rec.Spec.Written).To(ContainElement(refluxv1.WrittenField{Pointer: "/data/HOTFIX", LiveValue: `"on"`}))
		g.Expect(builds()).To(BeNumerically("==", 1), "revision %d: both edits recorded before any render landed", i+1)
	}
	applied := ks.Status.LastAppliedRevision

	// The newest revision's render fills every Pending record in.
	g.Expect(os.Remove(gate)).To(Succeed())
	for i := range commits {
		moving := fmt.Sprintf("moving-%d", i)
		// The fields are the record's spec and the state its status, two
		// writes: wait for both.
		rec := f.WaitRecord(g, "ConfigMap", moving, func(d *refluxv1.Drift) error {
			if d.Spec.Revision != applied {
				return fmt.Errorf("record %s is of revision %q, want %s", d.Name, d.Spec.Revision, applied)
			}
			if err := fixture.HasField("/data/HOTFIX")(d); err != nil {
				return err
			}
			return fixture.InState(refluxv1.DriftHeld)(d)
		})
		g.Expect(rec.Spec.Written).To(BeEmpty())
		g.Expect(rec.Spec.Fields).To(HaveLen(1), "%s: the commits' own values are Git's, not drift", moving)
	}
	// One render for the first revision, one for the revision that came
	// first while it was idle, and one for the newest: those in between
	// were skipped, never queued.
	g.Expect(builds()).To(BeNumerically("<=", 3), "renders skip to the newest revision")
}

// flagsOf renders n ConfigMaps named prefix-0… in one file, each with
// ENABLED "false" and, when commit is set, COMMIT=commit.
func flagsOf(prefix string, n int, commit string) string {
	var body string
	for i := range n {
		body += fmt.Sprintf("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\ndata:\n  ENABLED: \"false\"\n", prefix, i)
		if commit != "" {
			body += fmt.Sprintf("  COMMIT: %q\n", commit)
		}
	}
	return body
}

// renderBuilds is how many renders of ks reflux r built successfully.
func renderBuilds(g Gomega, r *testenv.RefluxProcess, ks *kustomizev1.Kustomization) float64 {
	v, _ := fixture.Metric(g, r.Process, "reflux_render_builds_total",
		map[string]string{"namespace": ks.Namespace, "kustomization": ks.Name, "result": "success"})
	return v
}
