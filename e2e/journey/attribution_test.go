package journey

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// attributionYAML declares one object per kind of change the audit log
// must attribute.
const attributionYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: attr-add
data:
  A: "1"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: attr-update
data:
  MODE: "blue"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: attr-remove
data:
  KEEP: "1"
  GONE: "1"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: attr-delete
data:
  X: "1"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: attr-scale
spec:
  replicas: 2
  selector:
    matchLabels: {app: attr-scale}
  template:
    metadata:
      labels: {app: attr-scale}
    spec:
      containers:
        - name: app
          image: ghcr.io/example/app:1.0.0
`

// TestEveryChangeNamesItsAuthor (issue 17 §3): every kind of live change
// is attributed from the audit log to the person who made it: an added
// key, an updated one, a removed one (which leaves no managedFields entry
// to name it, so the audit event is matched by object and time), a
// deleted object, and a change through a subresource (scale).
func TestEveryChangeNamesItsAuthor(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	f := fixture.NewApp(t, env, "attribution", fixture.AppOptions{Files: fixture.OneFile("objects.yaml", attributionYAML)})
	bob, err := env.AddBreakGlassUser(ctx, "bob@example.com")
	g.Expect(err).NotTo(HaveOccurred())

	changes := []struct {
		kind, object, pointer string
		by                    string
		change                refluxv1.ChangeType
		args                  []string
	}{
		{"ConfigMap", "attr-add", "/data/NEW", aliceName, refluxv1.ChangeAdd,
			[]string{"patch", "configmap/attr-add", "--type=merge", "-p", `{"data":{"NEW":"1"}}`}},
		{"ConfigMap", "attr-update", "/data/MODE", aliceName, refluxv1.ChangeUpdate,
			[]string{"patch", "configmap/attr-update", "--type=merge", "-p", `{"data":{"MODE":"green"}}`}},
		{"ConfigMap", "attr-remove", "/data/GONE", bob.Name, refluxv1.ChangeRemove,
			[]string{"patch", "configmap/attr-remove", "--type=json", "-p", `[{"op":"remove","path":"/data/GONE"}]`}},
		{"Deployment", "attr-scale", "/spec/replicas", aliceName, refluxv1.ChangeUpdate,
			[]string{"scale", "deployment/attr-scale", "--replicas=4"}},
		{"ConfigMap", "attr-delete", refluxv1.WholeObjectPointer, aliceName, refluxv1.ChangeRemove,
			[]string{"delete", "configmap/attr-delete"}},
	}
	for _, c := range changes {
		as := alice.User
		if c.by == bob.Name {
			as = bob
		}
		_, err := env.KubectlAs(ctx, as, append([]string{"-n", f.Name}, c.args...)...)
		g.Expect(err).NotTo(HaveOccurred(), "%v", c.args)
	}
	for _, c := range changes {
		rec := f.WaitRecord(g, c.kind, c.object, fixture.Attributed(c.pointer))
		fl, _ := fixture.Field(rec, c.pointer)
		g.Expect(fl.ChangeType).To(Equal(c.change), c.object)
		g.Expect(fl.Modifier.User).To(Equal(c.by), "%s %s", c.object, c.pointer)
		g.Expect(rec.Spec.LastModifier).NotTo(BeNil(), c.object)
		g.Expect(rec.Spec.LastModifier.User).To(Equal(c.by), c.object)
	}
	rec := f.WaitRecord(g, "ConfigMap", "attr-remove", fixture.HasField("/data/GONE"))
	fl, _ := fixture.Field(rec, "/data/GONE")
	g.Expect(fl.Modifier.Manager).To(Equal("kubectl-patch"), "the request's field manager, from the audit event")
	g.Expect(fl.Modifier.Time).NotTo(BeNil(), "when the audit log says it was removed")
}

// TestAnEditBeforeItsKindIsWatchedNamesItsAuthor: a person edits an
// object whose kind reflux watches for no Kustomization yet, and its
// Kustomization is governed a moment later, as in the demo, where the
// hotfix follows the policy's Ready by no time at all. The audit store
// kept only writes to watched kinds then, so the record was written
// without the author's name (the demo's CI failure of stop 43).
//
// The edit's audit event must have reached reflux before the policy
// selects the app, or the write is simply kept: a second app, governed
// from the start, is edited after it and its record must name alice
// first. Nothing else in this suite applies a ResourceQuota.
func TestAnEditBeforeItsKindIsWatchedNamesItsAuthor(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	const quota = `apiVersion: v1
kind: ResourceQuota
metadata:
  name: quota
spec:
  hard:
    pods: "10"
`
	late := fixture.NewApp(t, env, "governed-late", fixture.AppOptions{Files: fixture.OneFile("quota.yaml", quota), Unwatched: true,
		Policy: func(p *refluxv1.ReverseSyncPolicy) {
			p.Spec.KustomizationSelector.MatchLabels = map[string]string{fixture.AppLabel: "not-yet"}
		}})
	barrier := fixture.NewApp(t, env, "governed-early", fixture.AppOptions{Files: fixture.OneFile("flags.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: flags
data:
  A: "1"
`)})

	_, err := env.KubectlAs(ctx, alice.User, "-n", late.Name, "patch", "resourcequota/quota", "--type=merge", "-p", `{"spec":{"hard":{"pods":"20"}}}`)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = env.KubectlAs(ctx, alice.User, "-n", barrier.Name, "patch", "configmap/flags", "--type=merge", "-p", `{"data":{"A":"2"}}`)
	g.Expect(err).NotTo(HaveOccurred())
	barrier.WaitRecord(g, "ConfigMap", "flags", fixture.Attributed("/data/A"))

	policy := late.Policy.DeepCopy()
	policy.Spec.KustomizationSelector.MatchLabels = map[string]string{fixture.AppLabel: late.Name}
	g.Expect(env.Client.Patch(ctx, policy, client.MergeFrom(late.Policy))).To(Succeed())
	rec := late.WaitRecord(g, "ResourceQuota", "quota", fixture.Attributed("/spec/hard/pods"))
	fl, _ := fixture.Field(rec, "/spec/hard/pods")
	g.Expect(fl.Modifier.User).To(Equal(aliceName))
	g.Expect(fl.Modifier.Manager).To(Equal("kubectl-patch"))
}
