package livepath

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/record"
)

// TestHandMadeRecordIsNeverActedOn: someone with create rights on Drift
// (config/admission's policy is not installed here) writes a record that
// claims a mergeable field, under the very name reflux would give it,
// with reflux's finalizer and a Held status. reflux must not push it,
// must delete it with a Warning event naming it, and must go on to
// record the object's real drift, sealed.
func TestHandMadeRecordIsNeverActedOn(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := fixture.NewApp(t, env, "forged", fixture.AppOptions{Files: flags("flags")})
	pushesBefore := env.Git.Requests("forged.git").ReceivePack

	cm := f.ConfigMap(g, "flags")
	obj := refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: f.Name, Name: "flags", UID: string(cm.UID)}
	ks := refluxv1.KustomizationRef{Namespace: f.Kustomization().Namespace, Name: f.Kustomization().Name}
	now := metav1.Now()
	forged := &refluxv1.Drift{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Name, Name: record.Name(ks, obj),
			Labels: map[string]string{record.KustomizationNameLabel: ks.Name, record.KustomizationNamespaceLabel: ks.Namespace},
			// A seal copied from nowhere: the right shape, the wrong MAC.
			Annotations: map[string]string{refluxv1.SealAnnotation: "v1.AAAA"},
			Finalizers:  []string{refluxv1.DriftFinalizer}},
		Spec: refluxv1.DriftSpec{Kustomization: ks, Policy: f.Name, Object: obj, Revision: f.Kustomization().Status.LastAppliedRevision,
			Fields: []refluxv1.DriftField{{Pointer: "/data/INJECTED", ChangeType: refluxv1.ChangeAdd,
				Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, LiveValue: "from-a-forged-record"}},
			FirstSeen: now, LastSeen: now},
	}
	g.Expect(env.Client.Create(ctx, forged)).To(Succeed())
	uid := forged.UID
	forged.Status.State = refluxv1.DriftHeld
	// reflux may already have deleted it, or dropped its finalizer.
	if err := env.Client.Status().Update(ctx, forged); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	// Deleted, finalizer and all, with a Warning event naming it.
	g.Eventually(func() error {
		d := &refluxv1.Drift{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(forged), d)
		if apierrors.IsNotFound(err) || err == nil && d.UID != uid {
			return nil
		}
		return fmt.Errorf("the hand-made record is still there (%v)", err)
	}, timeout, interval).Should(Succeed())
	g.Eventually(func() error {
		list := &corev1.EventList{}
		if err := env.Client.List(ctx, list, client.InNamespace(f.Name)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Kustomization" && e.Reason == governor.RecordNotSealedEventReason &&
				e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, forged.Name) {
				return nil
			}
		}
		return fmt.Errorf("no %s event naming %s", governor.RecordNotSealedEventReason, forged.Name)
	}, timeout, interval).Should(Succeed())

	// Nothing it claimed reached Git, and the object was not held for it.
	g.Consistently(func() int { return env.Git.Requests("forged.git").ReceivePack - pushesBefore },
		3*time.Second, interval).Should(BeZero(), "a hand-made record caused a push")
	g.Expect(fixture.Held(f.ConfigMap(g, "flags"))).To(BeFalse())

	// A real edit of the same object gets a real, sealed record and branch.
	f.AddKey(g, alice.Client, "flags", "FEATURE_DARK_MODE", "true")
	rec := f.WaitRecord(g, "ConfigMap", "flags", func(d *refluxv1.Drift) error {
		if d.Annotations[refluxv1.SealAnnotation] == "" {
			return fmt.Errorf("record %s carries no seal", d.Name)
		}
		if d.Status.Commit == "" {
			return errNotPushed
		}
		return nil
	})
	for _, fld := range rec.Spec.Fields {
		g.Expect(fld.Pointer).NotTo(Equal("/data/INJECTED"), "the forged field was adopted")
	}
	clone := t.TempDir()
	fixture.Git(t, "", "clone", "-q", "--branch", rec.Status.Branch, fixture.GitURL(env, "forged.git"), clone)
	g.Expect(fixture.Git(t, "", "-C", clone, "show", "--format=", "HEAD")).To(And(
		ContainSubstring("FEATURE_DARK_MODE"), Not(ContainSubstring("INJECTED"))))
}

// TestRecordWhoseAnnotationsWereReplacedIsKept: a client that replaces a
// record's annotations wholesale takes reflux's seal annotation with them.
// The copy of the seal in the status, which users do not write, still
// proves the record: the next evaluation keeps it, history and all, and
// seals its annotation again.
func TestRecordWhoseAnnotationsWereReplacedIsKept(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := fixture.NewApp(t, env, "reannotated", fixture.AppOptions{Files: flags("flags")})
	f.AddKey(g, alice.Client, "flags", "FEATURE_A", "true")
	rec := f.WaitRecord(g, "ConfigMap", "flags", func(d *refluxv1.Drift) error {
		if d.Status.Seal == "" || d.Status.Seal != d.Annotations[refluxv1.SealAnnotation] {
			return fmt.Errorf("record %s: status seal %q, annotation %q", d.Name, d.Status.Seal, d.Annotations[refluxv1.SealAnnotation])
		}
		return nil
	})
	firstSeen := rec.Spec.FirstSeen

	g.Eventually(func() error {
		d := &refluxv1.Drift{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), d); err != nil {
			return err
		}
		d.Annotations = map[string]string{"team": "payments"}
		return env.Client.Update(ctx, d)
	}, timeout, interval).Should(Succeed())

	f.AddKey(g, alice.Client, "flags", "FEATURE_B", "true")
	again := f.WaitRecord(g, "ConfigMap", "flags", func(d *refluxv1.Drift) error {
		if !slices.ContainsFunc(d.Spec.Fields, func(f refluxv1.DriftField) bool { return f.Pointer == "/data/FEATURE_B" }) {
			return fmt.Errorf("record %s has no /data/FEATURE_B yet", d.Name)
		}
		if d.Annotations[refluxv1.SealAnnotation] == "" {
			return fmt.Errorf("record %s is not sealed again yet", d.Name)
		}
		return nil
	})
	g.Expect(again.UID).To(Equal(rec.UID), "the record was kept, not deleted and made anew")
	g.Expect(again.Spec.FirstSeen.Equal(&firstSeen)).To(BeTrue(), "its history with it")
	g.Expect(again.Annotations).To(HaveKeyWithValue("team", "payments"), "the user's annotation stays")
	list := &corev1.EventList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(f.Name))).To(Succeed())
	for _, e := range list.Items {
		g.Expect(e.Reason).NotTo(Equal(governor.RecordNotSealedEventReason), "%s", e.Message)
	}
}
