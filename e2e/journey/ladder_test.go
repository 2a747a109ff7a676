package journey

import (
	"context"
	"fmt"
	"strings"
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// TestSeverityLadder (scenario 4): replicas are low, a securityContext
// change is high, and a memory limit four times the declared one is
// critical, its Warning event marked for paging.
func TestSeverityLadder(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	f := fixture.NewApp(t, env, "ladder", fixture.AppOptions{ReportOnly: true, Files: map[string]string{
		"kustomization.yaml": fixture.Kustomization("workers.yaml"),
		"workers.yaml": deployment("scaled", "ghcr.io/example/worker:1.8.0", 2, "") +
			deployment("locked", "ghcr.io/example/worker:1.8.0", 1,
				"          securityContext:\n            allowPrivilegeEscalation: false\n") +
			deployment("batch", "ghcr.io/example/worker:1.8.0", 1,
				"          resources:\n            limits:\n              memory: 512Mi\n"),
	}})
	kubectl := func(args ...string) {
		_, err := env.KubectlAs(ctx, alice.User, append([]string{"-n", f.Name}, args...)...)
		g.Expect(err).NotTo(HaveOccurred())
	}
	kubectl("scale", "deployment/scaled", "--replicas=5")
	kubectl("patch", "deployment/locked", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation","value":true}]`)
	kubectl("set", "resources", "deployment/batch", "--limits=memory=2Gi")

	for _, c := range []struct {
		name, pointer string
		severity      refluxv1.Severity
	}{
		{"scaled", "/spec/replicas", refluxv1.SeverityLow},
		{"locked", "/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation", refluxv1.SeverityHigh},
		{"batch", "/spec/template/spec/containers/0/resources/limits/memory", refluxv1.SeverityCritical},
	} {
		rec := f.WaitRecord(g, "Deployment", c.name, fixture.HasField(c.pointer))
		fl, _ := fixture.Field(rec, c.pointer)
		g.Expect(fl.Severity).To(Equal(c.severity), c.name)
		g.Expect(fl.Action).To(Equal(refluxv1.AlertAction), c.name)
		g.Eventually(func() float64 {
			v, _ := fixture.Metric(g, suiteReflux.Process, "reflux_drift_fields", map[string]string{
				"namespace": f.Name, "kind": "Deployment", "severity": string(c.severity), "action": "Alert"})
			return v
		}, fixture.Timeout, fixture.Interval).Should(BeNumerically(">=", 1), c.name)
	}

	// Only the critical one is marked for paging, on both event paths.
	ev := f.Event(g, "DriftDetected", "batch")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(ev.Message).To(HavePrefix(governor.CriticalPrefix))
	g.Expect(f.Event(g, "DriftDetected", "locked").Message).NotTo(HavePrefix(governor.CriticalPrefix))
	g.Expect(f.Event(g, "DriftDetected", "scaled").Message).NotTo(HavePrefix(governor.CriticalPrefix))
	key := "kustomize.toolkit.fluxcd.io/reflux-severity"
	g.Eventually(func() error {
		for _, e := range sink.find(func(e eventv1.Event) bool { return e.InvolvedObject.Namespace == f.Name }) {
			if strings.Contains(e.Message, "Deployment "+f.Name+"/batch ") {
				if e.Severity == eventv1.EventSeverityError && strings.HasPrefix(e.Message, governor.CriticalPrefix) &&
					e.Metadata[key] == string(refluxv1.SeverityCritical) {
					return nil
				}
				return fmt.Errorf("batch's event is %s %q %v", e.Severity, e.Message, e.Metadata)
			}
		}
		return fmt.Errorf("no event for batch received")
	}, fixture.Timeout, fixture.Interval).Should(Succeed())
}
