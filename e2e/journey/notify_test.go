package journey

import (
	"context"
	"fmt"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

const apiDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
  selector:
    matchLabels:
      app: api
  template:
    metadata:
      labels:
        app: api
    spec:
      containers:
        - name: app
          image: ghcr.io/example/api:3.1.0
`

// TestNotificationPath (scenario 9): a drift alert reaches Flux's
// notification-controller as it would receive it on --events-addr: an
// eventv1.Event about the Kustomization, with severity, reason, message and
// the metadata an Alert routes and templates on.
func TestNotificationPath(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	f := fixture.NewApp(t, env, "notify", fixture.AppOptions{ReportOnly: true, Files: fixture.OneFile("deploy.yaml", apiDeployment)})
	ks := f.Kustomization()
	_, err := env.KubectlAs(context.Background(), alice.User, "-n", f.Name, "set", "image", "deployment/api", "app=ghcr.io/example/api:3.0.9")
	g.Expect(err).NotTo(HaveOccurred())

	rec := f.WaitRecord(g, "Deployment", "api", fixture.HasField("/spec/template/spec/containers/0/image"))
	live := f.Get(g, ks.Name, &kustomizev1.Kustomization{}).(*kustomizev1.Kustomization)
	key := func(k string) string { return kustomizev1.GroupVersion.Group + "/" + k }

	var got eventv1.Event
	g.Eventually(func() error {
		events := sink.find(func(e eventv1.Event) bool {
			return e.InvolvedObject.Namespace == f.Name && e.Reason == "DriftDetected"
		})
		if len(events) == 0 {
			return fmt.Errorf("no DriftDetected event received; rejected requests: %v", sink.rejected())
		}
		got = events[0]
		return nil
	}, fixture.Timeout, fixture.Interval).Should(Succeed())

	g.Expect(got.InvolvedObject.Kind).To(Equal(kustomizev1.KustomizationKind))
	g.Expect(got.InvolvedObject.APIVersion).To(Equal(kustomizev1.GroupVersion.String()))
	g.Expect(got.InvolvedObject.Name).To(Equal(ks.Name))
	g.Expect(got.InvolvedObject.UID).To(Equal(live.UID))
	g.Expect(got.Severity).To(Equal(eventv1.EventSeverityError), "an Alert drift is a Warning: notification-controller's error severity")
	g.Expect(got.ReportingController).To(Equal("reflux"))
	g.Expect(got.Message).To(HavePrefix("Deployment " + f.Name + "/api drifted from Git: "))
	g.Expect(got.Message).To(ContainSubstring("/spec/template/spec/containers/0/image (high Alert"))
	g.Expect(got.Metadata).To(HaveKeyWithValue(key(eventv1.MetaRevisionKey), live.Status.LastAppliedRevision))
	g.Expect(got.Metadata).To(HaveKeyWithValue(key("reflux-origin"), MatchRegexp(`^deploy\.yaml:\d+$`)))
	// The live path does not wait for the audit webhook: the first event
	// names the field manager, and the user once the audit event was in.
	g.Expect(got.Metadata).To(HaveKeyWithValue(key("reflux-modifier"),
		Or(Equal("kubectl-set"), Equal(aliceName+" (kubectl-set)"))))
	g.Expect(got.Metadata).To(HaveKeyWithValue(key("reflux-severity"), string(refluxv1.SeverityHigh)))
	g.Expect(got.Metadata).To(HaveKeyWithValue(key("reflux-action"), string(refluxv1.AlertAction)))
	g.Expect(got.Metadata).To(HaveKeyWithValue(key("reflux-record"), rec.Name))

	// The origin's line is the image's line in deploy.yaml.
	origin := got.Metadata[key("reflux-origin")]
	line := strings.Index(apiDeployment, "image:")
	g.Expect(origin).To(Equal(fmt.Sprintf("deploy.yaml:%d", strings.Count(apiDeployment[:line], "\n")+1)))
	g.Expect(fixture.Held(f.Get(g, "api", &appsv1.Deployment{}))).To(BeTrue())
}
