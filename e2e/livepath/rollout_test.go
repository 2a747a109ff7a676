package livepath

import (
	"context"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// rolloutObjects is large enough that Flux takes seconds to build and
// apply a new revision, so edits land while it rolls out.
const rolloutObjects = 2000

// TestEditsDuringARolloutAreHeldAndRecorded: a new revision of a large
// tree changes every object; right after the source serves it, while
// kustomize-controller builds and applies it, a human edits objects Flux
// has not reached yet. Every edit is held before Flux gets there (Flux
// skips the object), kept, and recorded against the new revision once
// reflux has rendered it. Before the live path parked changes, these
// edits were compared with the stale render, dropped, and reverted by the
// rollout.
func TestEditsDuringARolloutAreHeldAndRecorded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := fixture.NewApp(t, env, "rollout", fixture.AppOptions{ReportOnly: true,
		Files: fixture.OneFile("configmaps.yaml", configMaps(rolloutObjects, "v1"))})

	// The next revision changes every object.
	next := fixture.Tree(t, "", fixture.OneFile("configmaps.yaml", configMaps(rolloutObjects, "v2")))
	commit, err := env.Git.PushDir(ctx, f.Repo, next)
	g.Expect(err).NotTo(HaveOccurred())
	rev2 := "main@sha1:" + commit
	_, err = env.RequestReconcile(ctx, f.Source)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string {
		src := &sourcev1.GitRepository{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.Source), src)).To(Succeed())
		if src.Status.Artifact == nil {
			return ""
		}
		return src.Status.Artifact.Revision
	}, timeout, 20*time.Millisecond).Should(Equal(rev2))

	// Flux applies in name order; the last names are the last it reaches.
	var edited []string
	for i := rolloutObjects - 5; i < rolloutObjects; i++ {
		name := fmt.Sprintf("cm-%05d", i)
		f.AddKey(g, alice.Client, name, "HOTFIX", "true")
		edited = append(edited, name)
	}
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.Kustomization()), ks)).To(Succeed())
	g.Expect(ks.Status.LastAppliedRevision).NotTo(Equal(rev2), "the edits were made before Flux finished the rollout")

	g.Eventually(func() string {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.Kustomization()), ks)).To(Succeed())
		return ks.Status.LastAppliedRevision + " " + string(conditions.Get(ks, meta.ReadyCondition).Status)
	}, 10*time.Minute, 20*time.Millisecond).Should(Equal(rev2 + " True"))

	// Flux has applied the revision; reflux is still rendering it. Edits
	// now are kept until the render is current, and held meanwhile: Flux's
	// next reconcile must not erase them either.
	var late []string
	for i := 10; i < 15; i++ {
		name := fmt.Sprintf("cm-%05d", i)
		f.AddKey(g, alice.Client, name, "LATE_HOTFIX", "true")
		late = append(late, name)
	}
	for _, name := range late {
		f.WaitRecord(g, "ConfigMap", name, func(d *refluxv1.Drift) error {
			if d.Spec.Revision != rev2 {
				return fmt.Errorf("record %s is of revision %s, want %s", d.Name, d.Spec.Revision, rev2)
			}
			return fixture.InState(refluxv1.DriftHeld)(d)
		})
	}
	g.Expect(env.Reconcile(ctx, ks)).To(Succeed())
	for _, name := range late {
		cm := f.ConfigMap(g, name)
		g.Expect(cm.Data).To(HaveKeyWithValue("LATE_HOTFIX", "true"), "%s: Flux's reconcile kept the held edit", name)
		g.Expect(fixture.Held(cm)).To(BeTrue())
	}

	for _, name := range edited {
		cm := f.ConfigMap(g, name)
		g.Expect(cm.Data).To(HaveKeyWithValue("HOTFIX", "true"), "%s: Flux must not have reverted the edit", name)
		g.Expect(fixture.Held(cm)).To(BeTrue(), "%s is held", name)
		g.Expect(cm.Data).To(HaveKeyWithValue("VALUE", fmt.Sprintf("v1-%s", name[len("cm-0"):])),
			"%s was held before Flux reached it, so the rollout skipped it", name)
		rec := f.WaitRecord(g, "ConfigMap", name, func(d *refluxv1.Drift) error {
			if d.Spec.Revision != rev2 {
				return fmt.Errorf("record %s is of revision %s, want %s", d.Name, d.Spec.Revision, rev2)
			}
			return fixture.InState(refluxv1.DriftHeld)(d)
		})
		g.Expect(rec.Spec.Fields).To(ContainElement(HaveField("Pointer", "/data/HOTFIX")))
	}
	// An object no one edited was rolled out and is not held.
	other := f.ConfigMap(g, "cm-00000")
	g.Expect(other.Data).To(HaveKeyWithValue("VALUE", "v2-0"))
	g.Expect(fixture.Held(other)).To(BeFalse())
}
