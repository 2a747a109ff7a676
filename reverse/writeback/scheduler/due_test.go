package scheduler

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
)

func TestDue(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	written := state{fingerprint: "fp1", revision: "main@sha1:1", checkedRevision: "main@sha1:1", checkedAt: t0, branches: true}
	tests := []struct {
		name         string
		st           state
		in           dueInput
		write, check bool
	}{
		{"nothing open, nothing written: nothing", state{}, dueInput{SourceRevision: "main@sha1:1", Now: t0, Interval: time.Minute}, false, false},
		{"new drift: write", state{}, dueInput{Fingerprint: "fp1", SourceRevision: "main@sha1:1", Now: t0, Interval: time.Minute}, true, false},
		{"new drift beside a branch: check first", state{}, dueInput{Fingerprint: "fp1", Branches: true, SourceRevision: "main@sha1:1", Now: t0, Interval: time.Minute}, true, true},
		{"same drift, same revision, within the interval: nothing", written,
			dueInput{Fingerprint: "fp1", Branches: true, SourceRevision: "main@sha1:1", Now: t0.Add(30 * time.Second), Interval: time.Minute}, false, false},
		{"same drift, interval passed: check only", written,
			dueInput{Fingerprint: "fp1", Branches: true, SourceRevision: "main@sha1:1", Now: t0.Add(time.Minute), Interval: time.Minute}, false, true},
		{"source moved under open drift: rebase and check", written,
			dueInput{Fingerprint: "fp1", Branches: true, SourceRevision: "main@sha1:2", Now: t0.Add(time.Second), Interval: time.Minute}, true, true},
		{"records resolved: report and check the merged branch", written,
			dueInput{SourceRevision: "main@sha1:2", Now: t0.Add(time.Second), Interval: time.Minute}, true, true},
		{"no branches left, source moved, nothing open: nothing", state{revision: "main@sha1:1"},
			dueInput{SourceRevision: "main@sha1:2", Now: t0.Add(time.Hour), Interval: time.Minute}, false, false},
		{"a push failed: the state is unchanged, so it is due again", state{},
			dueInput{Fingerprint: "fp1", SourceRevision: "main@sha1:1", Now: t0, Interval: time.Minute}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			write, check := due(tt.st, tt.in)
			g.Expect(write).To(Equal(tt.write), "write")
			g.Expect(check).To(Equal(tt.check), "check")
		})
	}
}

func TestDueOf(t *testing.T) {
	g := NewWithT(t)
	ks := &kustomizev1.Kustomization{}
	ks.Spec.Interval = metav1.Duration{Duration: 10 * time.Minute}
	gov := &reverse.Governed{Kustomization: ks, SourceRevision: "main@sha1:1"}
	field := func(a refluxv1.Action) []refluxv1.DriftField {
		return []refluxv1.DriftField{{Pointer: "/data/A", LiveValue: `"1"`, Action: a}}
	}
	merge := refluxv1.Drift{}
	merge.Name, merge.Spec.Fields = "merge", field(refluxv1.MergeAction)
	hotfix := refluxv1.Drift{}
	hotfix.Name, hotfix.Spec.Fields, hotfix.Spec.ManualHotfix = "hotfix", field(refluxv1.IgnoreAction), true
	dismissed := merge.DeepCopy()
	dismissed.Name, dismissed.Status.State, dismissed.Status.Branch = "dismissed", refluxv1.DriftDismissed, "reflux/x/1"

	in := dueOf(gov, []refluxv1.Drift{hotfix, *dismissed}, time.Now())
	g.Expect(in.Fingerprint).To(BeEmpty(), "a hotfix and a closed record bind nothing for Git")
	g.Expect(in.Branches).To(BeFalse(), "a closed record's branch is not waited on")
	g.Expect(in.Interval).To(Equal(10*time.Minute), "the Kustomization's interval when the source has none")

	gov.SourceInterval = time.Minute
	proposed := merge.DeepCopy()
	proposed.Status.Branch = "reflux/x/2"
	in = dueOf(gov, []refluxv1.Drift{hotfix, *proposed}, time.Now())
	g.Expect(in.Fingerprint).NotTo(BeEmpty())
	g.Expect(in.Branches).To(BeTrue())
	g.Expect(in.Interval).To(Equal(time.Minute))
}
