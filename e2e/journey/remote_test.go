package journey

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/reverse/record"
)

// TestUnreachableWorkloadIdentityIsNeverGovernedHere (issue 24 §1): a
// governed Kustomization Flux applies to a remote cluster through
// spec.kubeConfig.configMapRef, whose workload identity ConfigMap reflux
// cannot use (here it does not exist), gets Drifted=Unknown, reason
// ClusterUnreachable, naming the ConfigMap; reflux watches, dry-runs,
// holds and records nothing of it in the cluster it runs in. Its objects
// are here too, labelled as Flux's (it was applied here before it became
// remote): the case where governing it as local would act on them.
// Remote clusters reflux reaches are governed there (e2e/fleet,
// reverse/fleet).
func TestUnreachableWorkloadIdentityIsNeverGovernedHere(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := "remote"
	g.Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
	files := map[string]string{}
	for dir, cm := range map[string]string{"local": "local-flags", "spoke": "spoke-flags"} {
		for name, body := range flagFiles(cm) {
			files[dir+"/"+name] = body
		}
	}
	f := fixture.NewApp(t, env, ns, fixture.AppOptions{Files: files, ReportOnly: true,
		Paths: map[string]string{"local": "./local", "spoke": "./spoke"}})
	g.Expect(f.WaitClean(ctx, "spoke")).To(Succeed())
	cloud := &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "spoke-identity"}}
	setKubeConfig(g, f, "spoke", cloud)
	unreachable := And(HavePrefix("Unknown/"+refluxv1.ClusterUnreachableReason+": "),
		ContainSubstring("workload identity ConfigMap remote/spoke-identity"))
	g.Eventually(func() string { return f.Condition(g, "spoke", refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(unreachable)

	// A change Flux would revert, to the remote Kustomization's object and
	// then to the local one's: once the local one is recorded and held,
	// reflux has had the remote one's change too, and let it be.
	since := time.Now()
	setEnabled(g, f, "spoke-flags", "true")
	setEnabled(g, f, "local-flags", "true")
	f.WaitRecord(g, "ConfigMap", "local-flags", fixture.InState(refluxv1.DriftHeld))
	notGoverned(t, g, f, since)
	g.Expect(fixture.Held(f.ConfigMap(g, "spoke-flags"))).To(BeFalse(), "not held")
	g.Expect(f.Condition(g, "spoke", refluxv1.DriftedCondition)).To(unreachable)
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
// alone: no new record of it, and no request of reflux's to its object
// since since (a dry run, a hold or a release).
func notGoverned(t *testing.T, g Gomega, f *fixture.App, since time.Time) {
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
