package release

import (
	"context"
	"errors"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/drift"
)

// fakeApplier answers the dry run with a fixed object, as the apiserver
// would, and records what it was sent; Get serves live objects by name.
type fakeApplier struct {
	answer  *unstructured.Unstructured
	err     error
	sent    []*unstructured.Unstructured
	opts    []client.ApplyOptions
	objects map[string]*unstructured.Unstructured
}

func (f *fakeApplier) Apply(_ context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	u := obj.(interface {
		UnstructuredContent() map[string]any
		SetUnstructuredContent(map[string]any)
	})
	f.sent = append(f.sent, (&unstructured.Unstructured{Object: u.UnstructuredContent()}).DeepCopy())
	o := client.ApplyOptions{}
	o.ApplyOptions(opts)
	f.opts = append(f.opts, o)
	if f.err != nil {
		return f.err
	}
	u.SetUnstructuredContent(f.answer.DeepCopy().Object)
	return nil
}

func (f *fakeApplier) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	live, ok := f.objects[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	obj.(*unstructured.Unstructured).Object = live.DeepCopy().Object
	return nil
}

const cmDesired = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  greeting: hello\n"

func liveCM(t *testing.T, greeting string, annotations map[string]string, entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\n  uid: u1\n  resourceVersion: \"42\"\ndata:\n  greeting: "+greeting+"\n")
	u.SetAnnotations(annotations)
	if len(entries) == 0 {
		entries = []metav1.ManagedFieldsEntry{owned("kubectl-edit", metav1.ManagedFieldsOperationUpdate, 3, `{"f:data":{"f:greeting":{}}}`)}
	}
	return withManaged(u, entries...)
}

func TestDetect(t *testing.T) {
	const update = metav1.ManagedFieldsOperationUpdate
	disabled := map[string]string{key: "disabled"}
	reflux := owned("reflux", update, 4, annotationSet)
	person := owned("kubectl-edit", update, 4, annotationSet)
	edit := owned("kubectl-edit", update, 3, `{"f:data":{"f:greeting":{}}}`)
	hotfix := []fieldWant{{"/data/greeting", "", refluxv1.ChangeUpdate, `"hello"`, `"hotfix"`, "kubectl-edit/Update"}}
	tests := []struct {
		name       string
		live       *unstructured.Unstructured
		mode       helmv2.DriftDetectionMode
		ignore     []string
		want       []fieldWant
		excluded   Exclusion
		missing    bool
		revertedAt Reversion
		reverts    bool
		dryRun     bool
	}{
		{name: "enabled: drift helm-controller reverts at the next reconcile", mode: helmv2.DriftDetectionEnabled,
			live: liveCM(t, "hotfix", nil), want: hotfix, revertedAt: AtReconcile, reverts: true, dryRun: true},
		{name: "warn: drift only an upgrade reverts", mode: helmv2.DriftDetectionWarn,
			live: liveCM(t, "hotfix", nil), want: hotfix, revertedAt: AtUpgrade, dryRun: true},
		{name: "no mode is disabled", live: liveCM(t, "hotfix", nil), want: hotfix, revertedAt: AtUpgrade, dryRun: true},
		{name: "held by reflux: diffed, reverted once the hold is lifted", mode: helmv2.DriftDetectionEnabled,
			live: liveCM(t, "hotfix", disabled, edit, reflux), want: hotfix, excluded: HeldByReflux,
			revertedAt: AfterHold, reverts: true, dryRun: true},
		{name: "held by reflux in warn mode", mode: helmv2.DriftDetectionWarn,
			live: liveCM(t, "hotfix", disabled, edit, reflux), want: hotfix, excluded: HeldByReflux, revertedAt: AtUpgrade, dryRun: true},
		{name: "excluded by a person: skipped, no request", mode: helmv2.DriftDetectionEnabled,
			live: liveCM(t, "hotfix", disabled, edit, person), excluded: ExcludedLive, revertedAt: AtUpgrade},
		{name: "an ignore rule for the whole object: skipped", mode: helmv2.DriftDetectionEnabled, ignore: []string{""},
			live: liveCM(t, "hotfix", nil), excluded: ExcludedByIgnoreRule, revertedAt: AtUpgrade},
		{name: "missing: created again at the next reconcile", mode: helmv2.DriftDetectionEnabled,
			missing: true, revertedAt: AtReconcile},
		{name: "in sync", mode: helmv2.DriftDetectionEnabled, live: liveCM(t, "hello", nil), revertedAt: AtReconcile, dryRun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			answer := liveCM(t, "hello", nil)
			answer.SetAnnotations(nil)
			f := &fakeApplier{answer: answer}
			d, err := New(f)
			g.Expect(err).NotTo(HaveOccurred())
			res, err := d.Detect(context.Background(), Input{Desired: obj(t, cmDesired), Live: tt.live, IgnorePaths: tt.ignore, Mode: tt.mode})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(wants(res.Fields)).To(Equal(append([]fieldWant{}, tt.want...)))
			g.Expect(res.Excluded).To(Equal(tt.excluded))
			g.Expect(res.Missing).To(Equal(tt.missing))
			g.Expect(res.RevertedAt).To(Equal(tt.revertedAt))
			for _, fl := range res.Fields {
				g.Expect(fl.FluxReverts).To(Equal(tt.reverts))
			}
			g.Expect(res.DriftFields()).To(HaveLen(len(tt.want)))
			if !tt.dryRun {
				g.Expect(f.sent).To(BeEmpty())
				return
			}
			g.Expect(f.sent).To(HaveLen(1))
			g.Expect(f.sent[0].GetResourceVersion()).To(Equal("42"), "conditioned on the live version")
			g.Expect(f.opts[0].DryRun).To(Equal([]string{metav1.DryRunAll}))
			g.Expect(*f.opts[0].Force).To(BeTrue())
			g.Expect(f.opts[0].FieldManager).To(Equal("helm-controller"))
		})
	}
}

func TestDetectErrors(t *testing.T) {
	live := liveCM(t, "hotfix", nil)
	other := live.DeepCopy()
	other.SetName("other")
	bare := live.DeepCopy()
	bare.SetManagedFields(nil)
	gone := liveCM(t, "hello", nil)
	gone.SetUID("u2")
	tests := []struct {
		name     string
		in       Input
		answer   *unstructured.Unstructured
		applyErr error
		want     error
	}{
		{name: "no desired object", in: Input{Live: live}, want: drift.ErrInvalidInput},
		{name: "two objects", in: Input{Desired: obj(t, cmDesired), Live: other}, want: drift.ErrInvalidInput},
		{name: "no managedFields", in: Input{Desired: obj(t, cmDesired), Live: bare}, want: drift.ErrInvalidInput},
		{name: "live changed since", in: Input{Desired: obj(t, cmDesired), Live: live}, want: drift.ErrStale,
			applyErr: apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "settings", errors.New("modified"))},
		{name: "live deleted and created again", in: Input{Desired: obj(t, cmDesired), Live: live}, answer: gone, want: drift.ErrStale},
		{name: "refused", in: Input{Desired: obj(t, cmDesired), Live: live},
			applyErr: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "settings", errors.New("no"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			answer := tt.answer
			if answer == nil {
				answer = liveCM(t, "hello", nil)
			}
			d, err := New(&fakeApplier{answer: answer, err: tt.applyErr})
			g.Expect(err).NotTo(HaveOccurred())
			_, err = d.Detect(context.Background(), tt.in)
			g.Expect(err).To(HaveOccurred())
			if tt.want != nil {
				g.Expect(errors.Is(err, tt.want)).To(BeTrue(), "%v", err)
			} else {
				g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the apiserver's error is kept: %v", err)
			}
		})
	}
	_, err := New(nil)
	NewWithT(t).Expect(err).To(HaveOccurred())
}
