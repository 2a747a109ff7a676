package helmflux

import (
	"context"
	"fmt"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// chart is testdata/charts/app's path in each release's repository.
const chart = "./charts/app"

// driftDetectionKey is the label or annotation that takes an object out
// of helm-controller's drift detection (v2.DriftDetectionMetadataKey).
const driftDetectionKey = "helm.toolkit.fluxcd.io/driftDetection"

// fields are the parts of a release's objects the tests edit live: the
// ConfigMap's greeting and color, a key added to it, and the
// Deployment's replicas.
type fields struct {
	Greeting, Color, Added string
	Replicas               int32
}

// Rendered is what the chart's default values render; Edited is what
// liveEdit leaves.
var (
	rendered = fields{Greeting: "hello", Color: "blue", Replicas: 2}
	edited   = fields{Greeting: "hotfix", Color: "red", Added: "by-alice", Replicas: 5}
)

// newRelease installs the chart as release name, in namespace name, with
// spec.driftDetection.mode and ignore rules.
func newRelease(t *testing.T, name string, mode helmv2.DriftDetectionMode, ignore ...helmv2.IgnoreRule) *fixture.Release {
	return fixture.NewRelease(t, env, name, fixture.ReleaseOptions{Dir: "testdata", Chart: chart,
		HelmRelease: func(hr *helmv2.HelmRelease) {
			hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: mode, Ignore: ignore}
		}})
}

// liveEdit makes alice's `kubectl edit`s (field manager kubectl-edit,
// Update): the ConfigMap's greeting and color changed and a key added,
// and the Deployment scaled. It checks that they are live.
func liveEdit(g Gomega, r *fixture.Release) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Name, Name: r.Name + "-settings"}}
	fixture.KubectlEdit(g, alice.Client, cm, func() {
		cm.Data["greeting"], cm.Data["color"], cm.Data["added"] = edited.Greeting, edited.Color, edited.Added
	})
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: r.Name, Name: r.Name}}
	fixture.KubectlEdit(g, alice.Client, deploy, func() { deploy.Spec.Replicas = ptr.To(edited.Replicas) })
	g.Expect(live(g, r)).To(Equal(edited))
}

// live reads the edited fields back.
func live(g Gomega, r *fixture.Release) fields {
	cm := r.ConfigMap(g, r.Name+"-settings")
	deploy := r.Get(g, r.Name, &appsv1.Deployment{}).(*appsv1.Deployment)
	return fields{Greeting: cm.Data["greeting"], Color: cm.Data["color"], Added: cm.Data["added"],
		Replicas: ptr.Deref(deploy.Spec.Replicas, 0)}
}

// markDriftDetectionDisabled sets helm.toolkit.fluxcd.io/driftDetection:
// disabled on the release's ConfigMap, as an annotation or a label, with
// a merge patch under field manager reflux: as reflux would hold it.
func markDriftDetectionDisabled(g Gomega, r *fixture.Release, as string) {
	patch := fmt.Appendf(nil, `{"metadata":{%q:{%q:"disabled"}}}`, as, driftDetectionKey)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Name, Name: r.Name + "-settings"}}
	g.Expect(env.Client.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, patch),
		client.FieldOwner("reflux"))).To(Succeed())
}

// managers lists an object's field managers as "name/operation".
func managers(obj client.Object) []string {
	var out []string
	for _, f := range obj.GetManagedFields() {
		out = append(out, f.Manager+"/"+string(f.Operation))
	}
	return out
}

// releaseName is helm-controller's name of a release version in its
// messages (Snapshot.FullReleaseName).
func releaseName(r *fixture.Release, version int) string {
	return fmt.Sprintf("%s/%s.v%d", r.Name, r.Name, version)
}
