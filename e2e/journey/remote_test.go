package journey

import (
	"context"
	"os"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse/record"
)

// TestRemoteKustomizationIsNeverGoverned (issue 24 §1): a governed
// Kustomization Flux applies through spec.kubeConfig gets Drifted=Unknown,
// reason RemoteClusterUnsupported, and one Warning event; reflux watches,
// dry-runs, holds and records nothing of it. Its kubeconfig points back at
// this apiserver, so its objects are here too, labelled as Flux's: the
// case where governing it as local would act on them. Dropping
// spec.kubeConfig governs it as any other Kustomization; gaining it again
// stops that, as when governance ends: a record keeps its hold for review.
func TestRemoteKustomizationIsNeverGoverned(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := "remote"
	secret := spokeKubeconfig(t, ns)
	remote := &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: secret}}
	files := map[string]string{}
	for dir, cm := range map[string]string{"local": "local-flags", "spoke": "spoke-flags"} {
		for name, body := range flagFiles(cm) {
			files[dir+"/"+name] = body
		}
	}
	f := fixture.NewApp(t, env, ns, fixture.AppOptions{Files: files, ReportOnly: true, Unwatched: true,
		Paths: map[string]string{"local": "./local", "spoke": "./spoke"},
		Kustomization: func(k *kustomizev1.Kustomization) {
			if k.Name == "spoke" {
				k.Spec.KubeConfig = remote
			}
		}})
	g.Expect(f.WaitClean(ctx, "local")).To(Succeed())
	unsupported := And(HavePrefix("Unknown/"+refluxv1.RemoteClusterUnsupportedReason+": "),
		ContainSubstring("spec.kubeConfig.secretRef: Secret "+secret))
	g.Eventually(func() string { return f.Condition(g, "spoke", refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(unsupported)
	ev := f.Event(g, refluxv1.RemoteClusterUnsupportedReason, "spec.kubeConfig")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(ev.InvolvedObject.Name).To(Equal("spoke"))

	// A change Flux would revert, to the remote Kustomization's object and
	// then to the local one's: once the local one is recorded and held,
	// reflux has had the remote one's change too, and let it be.
	setEnabled(g, f, "spoke-flags", "true")
	setEnabled(g, f, "local-flags", "true")
	f.WaitRecord(g, "ConfigMap", "local-flags", fixture.InState(refluxv1.DriftHeld))
	notGoverned(t, g, f, secret, time.Time{})
	g.Expect(fixture.Held(f.ConfigMap(g, "spoke-flags"))).To(BeFalse(), "not held")
	g.Expect(f.Condition(g, "spoke", refluxv1.DriftedCondition)).To(unsupported)

	// Without spec.kubeConfig Flux applies it here, reverting the change,
	// and reflux governs it: the next change is recorded and held.
	setKubeConfig(g, f, "spoke", nil)
	g.Expect(f.WaitClean(ctx, "spoke")).To(Succeed())
	setEnabled(g, f, "spoke-flags", "maybe")
	f.WaitRecord(g, "ConfigMap", "spoke-flags", fixture.All(fixture.HasField("/data/ENABLED"), fixture.InState(refluxv1.DriftHeld)))

	// With it again, reflux lets the Kustomization go: the record keeps
	// its hold for review, as when governance ends, and the next change is
	// neither recorded nor held.
	setKubeConfig(g, f, "spoke", remote)
	g.Eventually(func() string { return f.Condition(g, "spoke", refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(unsupported)
	since := time.Now()
	f.AddKey(g, alice.Client, "spoke-flags", "REGION", "eu")
	f.AddKey(g, alice.Client, "local-flags", "REGION", "eu")
	f.WaitRecord(g, "ConfigMap", "local-flags", fixture.HasField("/data/REGION"))
	notGoverned(t, g, f, secret, since)
	recs := f.Records(g, "ConfigMap", "spoke-flags")
	g.Expect(recs).To(HaveLen(1))
	_, err := fixture.Field(&recs[0], "/data/REGION")
	g.Expect(err).To(HaveOccurred(), "the change made while remote is not recorded")
	g.Expect(fixture.Held(f.ConfigMap(g, "spoke-flags"))).To(BeTrue(), "the record keeps its hold")

	// One Warning per time the Kustomization became remote, however often
	// reflux reconciled it meanwhile.
	g.Eventually(func() []eventv1.Event { return remoteEvents("spoke", ns) }, fixture.Timeout, fixture.Interval).Should(HaveLen(2))
	g.Consistently(func() []eventv1.Event { return remoteEvents("spoke", ns) }, 2*time.Second, 250*time.Millisecond).Should(HaveLen(2))
}

// spokeKubeconfig creates namespace ns and, in it, a Secret holding a
// kubeconfig for this apiserver as a cluster admin of its own, the way a
// hub keeps a spoke's; it returns the Secret's name.
func spokeKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
	u, err := env.AddUser("spoke-admin", "system:masters")
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := os.ReadFile(u.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred())
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "spoke-kubeconfig"},
		Data: map[string][]byte{"value": kubeconfig}}
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	return s.Name
}

// setEnabled changes the ENABLED flag Git declares, with kubectl as alice:
// a change Flux reverts at its next apply, so reflux holds it.
func setEnabled(g Gomega, f *fixture.App, name, value string) {
	out, err := env.KubectlAs(context.Background(), alice.User, "-n", f.Name, "patch", "configmap", name, "--type=merge",
		"-p", `{"data":{"ENABLED":"`+value+`"}}`)
	g.Expect(err).NotTo(HaveOccurred(), string(out))
}

// setKubeConfig sets or clears a Kustomization's spec.kubeConfig.
func setKubeConfig(g Gomega, f *fixture.App, ksName string, ref *meta.KubeConfigReference) {
	k := &kustomizev1.Kustomization{}
	f.Get(g, ksName, k)
	patch := client.MergeFrom(k.DeepCopy())
	k.Spec.KubeConfig = ref
	g.Expect(env.Client.Patch(context.Background(), k, patch)).To(Succeed())
}

// notGoverned checks that reflux leaves the remote Kustomization spoke
// alone: no new record of it, no request of reflux's to its object since
// since (a dry run, a hold or a release), and no read of its kubeconfig.
func notGoverned(t *testing.T, g Gomega, f *fixture.App, secret string, since time.Time) {
	t.Helper()
	ofSpoke := func(g Gomega) []refluxv1.Drift {
		list := &refluxv1.DriftList{}
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(f.Name),
			client.MatchingLabels{record.KustomizationNameLabel: "spoke"})).To(Succeed())
		return list.Items
	}
	before := ofSpoke(g)
	g.Consistently(func(g Gomega) {
		g.Expect(ofSpoke(g)).To(Equal(before), "no record of the remote Kustomization written")
		g.Expect(refluxWrites(g, f.Name, "spoke-flags", since)).To(BeEmpty(), "no dry run, hold or release")
	}, 2*time.Second, 250*time.Millisecond).Should(Succeed())
	reads, err := env.AuditEvents(func(e auditv1.Event) bool {
		return e.User.Username == testenv.RefluxUser && e.ObjectRef != nil && e.ObjectRef.Resource == "secrets" &&
			e.ObjectRef.Namespace == f.Name && e.ObjectRef.Name == secret
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reads).To(BeEmpty(), "reflux never reads the kubeconfig")
}

// refluxWrites are reflux's writes to the object name of namespace ns
// received since since, dry runs included, from the apiserver's audit log.
func refluxWrites(g Gomega, ns, name string, since time.Time) []auditv1.Event {
	evs, err := env.AuditEvents(func(e auditv1.Event) bool {
		return e.Stage == auditv1.StageResponseComplete && e.User.Username == testenv.RefluxUser &&
			e.ObjectRef != nil && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == name &&
			!e.RequestReceivedTimestamp.Time.Before(since)
	})
	g.Expect(err).NotTo(HaveOccurred())
	return evs
}

// remoteEvents are the RemoteClusterUnsupported events notification-
// controller received for the Kustomization ns/name.
func remoteEvents(name, ns string) []eventv1.Event {
	return sink.find(func(e eventv1.Event) bool {
		return e.Reason == refluxv1.RemoteClusterUnsupportedReason && e.InvolvedObject.Name == name &&
			e.InvolvedObject.Namespace == ns && e.Severity == eventv1.EventSeverityError
	})
}
