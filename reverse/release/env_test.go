package release

import (
	"context"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	// timeout bounds every wait on the environment; interval is how often
	// a wait looks.
	timeout, interval = 90 * time.Second, 250 * time.Millisecond
	// editor is the field manager of the tests' live edits: someone's
	// `kubectl edit`.
	editor = "kubectl-edit"
)

// rel is one installed release of testdata/charts/drift: a namespace of
// its own, with a repository, a GitRepository and a HelmRelease named
// after it.
type rel struct {
	env  *testenv.Env
	name string
	hr   *helmv2.HelmRelease
}

// install pushes testdata to repository <name>.git, creates namespace
// name with a GitRepository and a HelmRelease of the chart in the given
// drift detection mode, and waits until helm-controller has installed
// release version 1. Its interval is an hour, so only the tests'
// reconciles run; installs do not wait for readiness (there is no
// kubelet).
func install(t *testing.T, name string, dd helmv2.DriftDetection) *rel {
	t.Helper()
	e := clusterEnv(t)
	g := NewWithT(t)
	ctx := context.Background()
	_, err := e.Git.PushDir(ctx, name+".git", "testdata")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.CreateNamespace(ctx, name)).To(Succeed())
	_, err = e.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: name, Namespace: name, Repo: name + ".git", Interval: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	hr, err := e.CreateHelmRelease(ctx, testenv.HelmReleaseOptions{Name: name, Namespace: name, Source: name,
		Chart: "./charts/drift", Interval: time.Hour,
		Customize: func(hr *helmv2.HelmRelease) {
			hr.Spec.Install = &helmv2.Install{DisableWait: true}
			hr.Spec.Upgrade = &helmv2.Upgrade{DisableWait: true}
			hr.Spec.DriftDetection = &dd
		}})
	g.Expect(err).NotTo(HaveOccurred())
	r := &rel{env: e, name: name, hr: hr}
	g.Eventually(func(g Gomega) {
		hr := r.refresh(g)
		latest := hr.Status.History.Latest()
		g.Expect(latest).NotTo(BeNil())
		g.Expect(latest.Version).To(Equal(1))
		g.Expect(latest.Status).To(Equal("deployed"))
		g.Expect(conditions.IsReady(hr)).To(BeTrue())
	}, timeout, interval).Should(Succeed(), "HelmRelease %s installed", name)
	return r
}

// refresh reads the HelmRelease into r.hr.
func (r *rel) refresh(g Gomega) *helmv2.HelmRelease {
	g.Expect(r.env.Client.Get(context.Background(), client.ObjectKeyFromObject(r.hr), r.hr)).To(Succeed())
	return r.hr
}

// reconcile makes helm-controller reconcile now and waits until it has,
// and until the HelmRelease is Ready again: a reconcile that corrects
// drift ends Ready=Unknown and the retry after it sets Ready
// (docs/flux-behaviour.md).
func (r *rel) reconcile(g Gomega) {
	g.Expect(r.env.Reconcile(context.Background(), r.hr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		hr := r.refresh(g)
		g.Expect(conditions.IsReady(hr)).To(BeTrue(), "%v", conditions.Get(hr, meta.ReadyCondition))
	}, timeout, interval).Should(Succeed())
}

// drifted returns helm-controller's Drifted condition as
// "status/reason: message".
func (r *rel) drifted(g Gomega) string {
	c := conditions.Get(r.refresh(g), helmv2.DriftedCondition)
	g.Expect(c).NotTo(BeNil(), "helm-controller sets Drifted in warn and enabled modes")
	return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
}

// detect runs the package end to end, as the engine would: the release
// from status.history, read through Helm's storage, its desired objects,
// and their drift.
func (r *rel) detect(g Gomega) Drift {
	ctx := context.Background()
	hr := r.refresh(g)
	ref, err := Latest(hr)
	g.Expect(err).NotTo(HaveOccurred())
	rls, err := Load(ctx, r.env.Client, ref)
	g.Expect(err).NotTo(HaveOccurred())
	desired, err := Desired(rls, r.env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	d, err := New(r.env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := d.DetectAll(ctx, hr, desired)
	g.Expect(err).NotTo(HaveOccurred())
	return got
}

// object names one of the release's objects: kind and name suffix.
func (r *rel) object(apiVersion, kind, suffix string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(r.name)
	u.SetName(r.name + suffix)
	return u
}

func (r *rel) configMap() *unstructured.Unstructured { return r.object("v1", "ConfigMap", "-settings") }
func (r *rel) deployment() *unstructured.Unstructured {
	return r.object("apps/v1", "Deployment", "")
}
func (r *rel) secret() *unstructured.Unstructured { return r.object("v1", "Secret", "-credentials") }

// edit changes a live object with an Update as editor, as `kubectl edit`
// does.
func (r *rel) edit(g Gomega, like *unstructured.Unstructured, mutate func(u map[string]any)) {
	ctx := context.Background()
	live := like.DeepCopy()
	g.Expect(r.env.Client.Get(ctx, client.ObjectKeyFromObject(like), live)).To(Succeed())
	mutate(live.Object)
	g.Expect(r.env.Client.Update(ctx, live, client.FieldOwner(editor))).To(Succeed())
}

// hold writes helm.toolkit.fluxcd.io/driftDetection: disabled onto a live
// object as reflux holds one: a merge patch under reflux's field manager.
func (r *rel) hold(g Gomega, like *unstructured.Unstructured) {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"disabled"}}}`, helmv2.DriftDetectionMetadataKey)
	g.Expect(r.env.Client.Patch(context.Background(), like.DeepCopy(), client.RawPatch(types.MergePatchType, patch),
		client.FieldOwner(refluxv1.FieldManager))).To(Succeed())
}

// set sets a nested field of a decoded object, failing the test on a
// type clash.
func set(g Gomega, u map[string]any, value any, path ...string) {
	g.Expect(unstructured.SetNestedField(u, value, path...)).To(Succeed())
}
