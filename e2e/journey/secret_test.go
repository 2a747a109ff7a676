package journey

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// paymentsSecretYAML declares the Secret the journey edits; its name is on
// line 5, and its value is "sk_live_git" base64-encoded.
const paymentsSecretYAML = "# The payments API's key; Flux applies it as is.\napiVersion: v1\nkind: Secret\nmetadata:\n  name: payments-api\ntype: Opaque\ndata:\n  API_KEY: c2tfbGl2ZV9naXQ=\n"

// TestSecretWrittenLiveIsReportedFromTheAuditLog (issue 11 §6): the
// suite's reflux runs with the default --secrets=metadata, so it never
// reads a Secret. alice's `kubectl patch` of a Secret Flux applied is still
// drift: the audit log names the Secret, the user and the time, and reflux
// records the whole object as changed, content unknown: a high Alert at the
// document that declares it, a Warning event, no hold, nothing in Git.
// Flux restores the Secret at its next reconcile; the record stays open as
// the evidence.
func TestSecretWrittenLiveIsReportedFromTheAuditLog(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	files := map[string]string{
		"kustomization.yaml": fixture.Kustomization("payments-api.yaml"),
		"payments-api.yaml":  paymentsSecretYAML,
	}
	f := fixture.NewApp(t, env, "secret-meta", fixture.AppOptions{Files: files})
	ks := f.Kustomization()

	_, err := env.KubectlAs(ctx, alice.User, "-n", f.Name, "patch", "secret/payments-api", "--type=merge",
		"-p", `{"data":{"API_KEY":"c2tfbGl2ZV9ob3RmaXg="}}`)
	g.Expect(err).NotTo(HaveOccurred())

	rec := f.WaitRecord(g, "Secret", "payments-api", func(d *refluxv1.Drift) error {
		if err := fixture.HasField(refluxv1.WholeObjectPointer)(d); err != nil {
			return err
		}
		return fixture.InState(refluxv1.DriftDetected)(d) // never held
	})
	g.Expect(rec.Spec.Fields).To(HaveLen(1))
	fl := rec.Spec.Fields[0]
	g.Expect(fl.ContentUnknown()).To(BeTrue(), "the whole object, changed: %+v", fl)
	g.Expect(fl.Action).To(Equal(refluxv1.AlertAction))
	g.Expect(fl.Severity).To(Equal(refluxv1.SeverityHigh))
	g.Expect(fl.Rule).To(Equal("default:content-not-read"))
	g.Expect(fl.Modifier).NotTo(BeNil())
	g.Expect(fl.Modifier.User).To(Equal(aliceName))
	g.Expect(fl.Modifier.Manager).To(Equal("kubectl-patch"))
	g.Expect(fl.Modifier.Operation).To(Equal("Update"))
	g.Expect(fl.Origin).NotTo(BeNil())
	g.Expect(fl.Origin.File).To(Equal("payments-api.yaml"))
	g.Expect(fl.Origin.Line).To(BeEquivalentTo(5), "the document's name line")
	g.Expect(fl.LiveValue+fl.GitValue).To(BeEmpty(), "reflux never read a value")
	g.Expect(rec.Status.HeldSince).To(BeNil())

	ev := f.Event(g, "DriftDetected", "payments-api was written live")
	g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(ev.Message).To(ContainSubstring("--secrets=metadata"))
	g.Expect(ev.Message).NotTo(ContainSubstring("sk_live"), "no value is ever in an event")
	g.Eventually(func() string { return f.Condition(g, ks.Name, refluxv1.DriftedCondition) }, fixture.Timeout, fixture.Interval).
		Should(HavePrefix("True/"))
	// Write-back runs and refuses the field, saying why; no branch.
	g.Eventually(func() string { return f.Condition(g, ks.Name, refluxv1.ReverseSyncedCondition) }, fixture.Timeout, fixture.Interval).
		Should(And(HavePrefix("False/"+refluxv1.RefusedReason), ContainSubstring("does not read this Secret")))
	g.Expect(fixture.Branches(t, env, f.Repo)).To(BeEmpty(), "no reflux branch")

	live := f.Get(g, "payments-api", &corev1.Secret{}).(*corev1.Secret)
	g.Expect(fixture.Held(live)).To(BeFalse())
	g.Expect(string(live.Data["API_KEY"])).To(Equal("sk_live_hotfix"), "reflux left the live Secret alone")

	// Flux restores Git's value; the record stays open as the evidence.
	f.Reconcile(g, ks.Name)
	g.Eventually(func() string {
		s := f.Get(g, "payments-api", &corev1.Secret{}).(*corev1.Secret)
		return string(s.Data["API_KEY"])
	}, fixture.Timeout, fixture.Interval).Should(Equal("sk_live_git"))
	g.Consistently(func() error {
		recs := f.Records(g, "Secret", "payments-api")
		if len(recs) != 1 {
			return fmt.Errorf("%d records", len(recs))
		}
		if recs[0].Status.State != refluxv1.DriftDetected {
			return fmt.Errorf("record is %s", recs[0].Status.State)
		}
		if u := recs[0].Spec.Fields[0].Modifier.User; u != aliceName {
			return fmt.Errorf("Flux's restore was taken for drift by %s", u)
		}
		return nil
	}, 3*time.Second, 300*time.Millisecond).Should(Succeed())

	// reflux made no request for the Secret, not even a list: the audit
	// log, which has alice's patch, shows none by reflux.
	g.Expect(secretRequests(g, f.Name, "payments-api", alice.Name)).To(ContainElement(HavePrefix("patch ")))
	reflux := "system:serviceaccount:" + testenv.RefluxNamespace + ":" + testenv.RefluxServiceAccount
	g.Expect(strings.Join(secretRequests(g, f.Name, "payments-api", reflux), "\n")).To(BeEmpty())
}

// secretRequests lists the audited requests user made that could read or
// write the Secret ns/name, including lists and watches of every Secret in
// ns or in the cluster, as "verb requestURI".
func secretRequests(g Gomega, ns, name, user string) []string {
	evs, err := env.AuditEvents(func(ev auditv1.Event) bool {
		r := ev.ObjectRef
		return r != nil && r.APIGroup == "" && r.Resource == "secrets" &&
			(r.Namespace == ns || r.Namespace == "") && (r.Name == name || r.Name == "") &&
			(ev.User.Username == user || ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username == user)
	})
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Verb+" "+ev.RequestURI)
	}
	return out
}
