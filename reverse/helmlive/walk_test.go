package helmlive

import (
	"context"
	"errors"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/classify"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/execute"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/release"
)

// governing is the engine's registry with one governed Kustomization.
type governing struct{ gov *reverse.Governed }

func (g governing) Snapshot(id types.NamespacedName) (reverse.Snapshot, bool) {
	if id.Namespace != g.gov.Kustomization.Namespace || id.Name != g.gov.Kustomization.Name {
		return reverse.Snapshot{}, false
	}
	return reverse.Snapshot{Gov: g.gov}, true
}

// deciding is the executor: it decides for a plan with no record and
// keeps what was decided. It holds ahead of the evaluation only when
// prehold is set, and keeps the plans it held then; the object it holds
// is prehold, which it returns held, as the apiserver would.
type deciding struct {
	decisions []decide.Decision
	// plans are those the decisions were made for.
	plans   []*execute.Plan
	prehold *unstructured.Unstructured
	preheld []*execute.Plan
}

func (d *deciding) Prehold(_ context.Context, p *execute.Plan, at time.Time) (*unstructured.Unstructured, error) {
	if d.prehold == nil {
		return nil, nil
	}
	d.preheld = append(d.preheld, p)
	held := d.prehold.DeepCopy()
	held.SetAnnotations(refluxv1.HoldAnnotations(p.Name, at, p.HelmRelease != nil))
	t := metav1.NewTime(at)
	held.SetManagedFields(append(held.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: refluxv1.FieldManager,
		Operation: metav1.ManagedFieldsOperationApply, Time: &t, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{}}}`)}}))
	return held, nil
}

func (d *deciding) WithRecord(_ context.Context, p *execute.Plan, fn func(*refluxv1.Drift) (decide.Decision, error)) error {
	dec, err := fn(nil)
	d.decisions = append(d.decisions, dec)
	d.plans = append(d.plans, p)
	return err
}

// webRelease is the HelmRelease apps/web, applied by ks, whose first
// release helm-controller made.
func webRelease(ks *kustomizev1.Kustomization) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{}
	hr.Namespace, hr.Name = "apps", "web"
	hr.Labels = map[string]string{"kustomize.toolkit.fluxcd.io/name": ks.Name, "kustomize.toolkit.fluxcd.io/namespace": ks.Namespace}
	hr.Status.History = helmv2.Snapshots{{Name: "web", Namespace: "apps", Version: 1}}
	return hr
}

// webObject is the release's Deployment, scaled to 5 live, with
// annotations and the managedFields entries given.
func webObject(annotations map[string]string, entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(5)}}}
	u.SetGroupVersionKind(deployment)
	u.SetNamespace("apps")
	u.SetName("web")
	u.SetLabels(map[string]string{NamespaceLabel: "apps", NameLabel: "web"})
	u.SetAnnotations(annotations)
	u.SetManagedFields(entries)
	return u
}

// webWrites are webObject's writes: helm-controller's install an hour
// before now, and a person's kubectl edit of the replicas a minute before.
func webWrites(now time.Time) (helm, edit metav1.ManagedFieldsEntry) {
	t0, t1 := metav1.NewTime(now.Add(-time.Hour)), metav1.NewTime(now.Add(-time.Minute))
	helm = metav1.ManagedFieldsEntry{Manager: release.FieldOwner, Operation: metav1.ManagedFieldsOperationApply, Time: &t0,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}
	edit = metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t1,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}}
	return helm, edit
}

// TestAnUnreadableReleaseKeepsTheChange (issue 19 §2, the live-path
// rule): the release a live change is compared with cannot be read from
// Helm's storage. The change is written down at once as a Pending record
// naming its writer, and held, and the walk fails so that it is tried
// again; a change only helm-controller made is none.
func TestAnUnreadableReleaseKeepsTheChange(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	// The detector only reads managedFields here: a client it called
	// would panic.
	owners, err := drift.New(struct{ client.Client }{}, drift.WithFieldOwner(release.FieldOwner))
	g.Expect(err).NotTo(HaveOccurred())
	ks := &kustomizev1.Kustomization{}
	ks.Namespace, ks.Name = "flux-system", "apps"
	exec := &deciding{}
	gv := &Governor{opts: Options{Owners: owners, Executor: exec, Now: func() time.Time { return now },
		Governance: governing{&reverse.Governed{Kustomization: ks, Policy: &refluxv1.ReverseSyncPolicy{}}}},
		releases: newReleases(missingStorage{}, nil), health: map[types.NamespacedName]Health{}}
	hr := webRelease(ks)
	gvk := deployment
	object := func(entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		return webObject(nil, entries...)
	}
	helm, edit := webWrites(now)

	live := object(helm, edit)
	err = walk{g: gv, hr: hr, k: intake.KeyOf(gvk, live), live: live, seen: now}.run(context.Background())
	g.Expect(err).To(MatchError(ContainSubstring("release apps/web.v1 in namespace apps: release not found in Helm storage")), "tried again")
	g.Expect(exec.preheld).To(BeEmpty(), "this executor holds nothing ahead")
	g.Expect(exec.decisions).To(HaveLen(1))
	d := exec.decisions[0]
	g.Expect(d.Action).To(Equal(decide.Create))
	g.Expect(d.Hold).To(Equal(decide.Hold), "held: helm-controller's correction or the next upgrade would erase it")
	g.Expect(d.Record.Status.State).To(Equal(refluxv1.DriftPending))
	g.Expect(d.Record.Spec.LastModifier.Manager).To(Equal("kubectl-edit"))
	g.Expect(d.Record.Spec.Written).To(ContainElement(HaveField("Pointer", "/spec/replicas")))
	g.Expect(gv.Health(types.NamespacedName{Namespace: "apps", Name: "web"}).ReleaseErr).To(HaveOccurred(), "and the HelmRelease says why")

	exec.decisions = nil
	live = object(helm)
	err = walk{g: gv, hr: hr, k: intake.KeyOf(gvk, live), live: live, seen: now}.run(context.Background())
	g.Expect(err).To(HaveOccurred())
	g.Expect(exec.decisions).To(BeEmpty(), "only helm-controller wrote it: nothing to keep")
}

// TestAnEditIsHeldBeforeItsReleaseIsRead (issue 19 §8): a person's edit
// of a release's object is held before Helm's storage is read or
// helm-controller's dry run asked, under the name its record will have:
// the hold never waits on either. The walk goes on with the object as the
// hold left it, so it is not held again. An object only helm-controller
// wrote, one held already, one a policy may not hold, and one listed
// rather than seen changed, are not held ahead.
func TestAnEditIsHeldBeforeItsReleaseIsRead(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	helm, edit := webWrites(now)
	object := webObject
	never, err := classify.New(&refluxv1.ReverseSyncPolicySpec{Hold: refluxv1.HoldNever})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		live  *unstructured.Unstructured
		seen  time.Time
		never bool
		held  bool
	}{
		{name: "a person's edit", live: object(nil, helm, edit), seen: now, held: true},
		{name: "helm-controller's own write", live: object(nil, helm), seen: now},
		{name: "held already", live: object(refluxv1.HoldAnnotations("other", now, true), helm, edit), seen: now},
		{name: "a policy that does not hold", live: object(nil, helm, edit), seen: now, never: true},
		{name: "listed, not seen changed", live: object(nil, helm, edit)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			owners, err := drift.New(struct{ client.Client }{}, drift.WithFieldOwner(release.FieldOwner))
			g.Expect(err).NotTo(HaveOccurred())
			ks := &kustomizev1.Kustomization{}
			ks.Namespace, ks.Name = "flux-system", "apps"
			exec := &deciding{prehold: tc.live}
			gov := &reverse.Governed{Kustomization: ks, Policy: &refluxv1.ReverseSyncPolicy{}}
			if tc.never {
				gov.Classifier = never
			}
			gv := &Governor{opts: Options{Owners: owners, Executor: exec, Now: func() time.Time { return now }, Log: logr.Discard(),
				Governance: governing{gov}},
				releases: newReleases(missingStorage{}, nil), health: map[types.NamespacedName]Health{}}
			hr := webRelease(ks)

			err = walk{g: gv, hr: hr, k: intake.KeyOf(deployment, tc.live), live: tc.live, seen: tc.seen}.run(context.Background())
			g.Expect(err).To(MatchError(ContainSubstring("release not found in Helm storage")), "the release is read after")
			if !tc.held {
				g.Expect(exec.preheld).To(BeEmpty())
				return
			}
			g.Expect(exec.decisions).To(HaveLen(1))
			d := exec.decisions[0]
			g.Expect(d.Action).To(Equal(decide.Create))
			g.Expect(d.Hold).NotTo(Equal(decide.Hold), "held already, as the hold left it: not held again")
			g.Expect(d.Record.Status.HeldSince).NotTo(BeNil(), "the record says it holds the object")
			g.Expect(exec.preheld).To(HaveLen(1))
			p := exec.preheld[0]
			g.Expect(p.Name).To(Equal(d.Record.Name), "under its record's name")
			g.Expect(p.As).To(BeEmpty(), "as reflux: the HelmRelease names no ServiceAccount")
		})
	}
}

// oneRelease reads hr, the only HelmRelease there is.
type oneRelease struct{ hr *helmv2.HelmRelease }

func (o oneRelease) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if key != client.ObjectKeyFromObject(o.hr) {
		return apierrors.NewNotFound(helmv2.GroupVersion.WithResource("helmreleases").GroupResource(), key.Name)
	}
	o.hr.DeepCopyInto(obj.(*helmv2.HelmRelease))
	return nil
}

func (o oneRelease) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

// TestAReleaseIsWalkedOnlyByItsClustersGovernor (issue 19 §2): the
// hub's Governor walks the objects of releases installed in the hub, and
// a remote cluster's those of the releases its Options.Cluster serves,
// naming the cluster in their records. Each leaves the other's alone: the
// labels the watches select on name only the HelmRelease, and a hub and
// a spoke may both have an object carrying them.
func TestAReleaseIsWalkedOnlyByItsClustersGovernor(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	helm, edit := webWrites(now)
	spoke := func(hr *helmv2.HelmRelease) (string, bool) {
		if hr.Spec.KubeConfig == nil {
			return "", false
		}
		return "Secret/" + hr.Spec.KubeConfig.SecretRef.Name, true
	}
	for _, tc := range []struct {
		name    string
		cluster func(*helmv2.HelmRelease) (string, bool)
		remote  bool
		walked  bool
		named   string
	}{
		{name: "the hub's release, by the hub's Governor", walked: true},
		{name: "a remote release, by the hub's Governor", remote: true},
		{name: "a remote release, by its cluster's Governor", cluster: spoke, remote: true, walked: true, named: "Secret/spoke"},
		{name: "the hub's release, by a remote cluster's Governor", cluster: spoke},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			owners, err := drift.New(struct{ client.Client }{}, drift.WithFieldOwner(release.FieldOwner))
			g.Expect(err).NotTo(HaveOccurred())
			ks := &kustomizev1.Kustomization{}
			ks.Namespace, ks.Name = "flux-system", "apps"
			hr := webRelease(ks)
			if tc.remote {
				hr.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "spoke"}}
			}
			exec := &deciding{}
			gv := &Governor{opts: Options{Owners: owners, Executor: exec, Now: func() time.Time { return now }, Log: logr.Discard(),
				HelmReleases: oneRelease{hr}, Cluster: tc.cluster,
				Governance: governing{&reverse.Governed{Kustomization: ks, Policy: &refluxv1.ReverseSyncPolicy{}}}},
				releases: newReleases(missingStorage{}, nil), health: map[types.NamespacedName]Health{}, deleted: map[intake.Key]deletion{}}
			live := webObject(nil, helm, edit)

			err = gv.walk(context.Background(), client.ObjectKeyFromObject(hr), walk{g: gv, k: intake.KeyOf(deployment, live), live: live, seen: now})
			if !tc.walked {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(exec.decisions).To(BeEmpty(), "left to the Governor of the cluster it is installed in")
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring("release not found in Helm storage")), "read from this cluster's storage")
			g.Expect(exec.decisions).To(HaveLen(1))
			ref := exec.plans[0].HelmRelease
			g.Expect(ref).NotTo(BeNil())
			g.Expect(ref.Cluster).To(Equal(tc.named), "the record names the cluster its object and hold are in")
		})
	}
}

// TestUpgradeInFlight: fields that differ from the release
// helm-controller names are an upgrade in flight only when helm-controller
// owns them live and no writer whose writes can be drift owns any. It
// reads the live object's managedFields through the real detector, the
// way walk does: a field's owner is its nearest owned ancestor's, and a
// field the object lacks counts for nobody.
func TestUpgradeInFlight(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	at := metav1.NewTime(now.Add(-time.Minute))
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Time: &at, FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	helmReplicas := entry(release.FieldOwner, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:replicas":{}}}`)
	helmSpec := entry(release.FieldOwner, metav1.ManagedFieldsOperationApply, `{"f:spec":{}}`)
	helmTemplate := entry(release.FieldOwner, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:template":{}}}`)
	personReplicas := entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:replicas":{}}}`)
	personLabel := entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:labels":{"f:tier":{}}}}`)
	for _, tc := range []struct {
		name     string
		entries  []metav1.ManagedFieldsEntry
		pointers []string
		want     bool
	}{
		{name: "helm-controller's alone", entries: []metav1.ManagedFieldsEntry{helmReplicas},
			pointers: []string{"/spec/replicas"}, want: true},
		{name: "a person's alone", entries: []metav1.ManagedFieldsEntry{personReplicas}, pointers: []string{"/spec/replicas"}},
		{name: "both own the field", entries: []metav1.ManagedFieldsEntry{helmReplicas, personReplicas}, pointers: []string{"/spec/replicas"}},
		{name: "one field each", entries: []metav1.ManagedFieldsEntry{helmReplicas, personLabel},
			pointers: []string{"/spec/replicas", "/metadata/labels/tier"}},
		{name: "helm-controller owns the field's nearest owned ancestor", entries: []metav1.ManagedFieldsEntry{helmTemplate},
			pointers: []string{"/spec/template/spec/containers"}, want: true},
		{name: "a person's field under helm-controller's parent is the person's", entries: []metav1.ManagedFieldsEntry{helmSpec, personReplicas},
			pointers: []string{"/spec/replicas"}},
		{name: "nobody's: a field a person removed", entries: []metav1.ManagedFieldsEntry{helmReplicas},
			pointers: []string{"/spec/paused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			// The detector only reads managedFields here: a client it
			// called would fail the test.
			owners, err := drift.New(struct{ client.Client }{}, drift.WithFieldOwner(release.FieldOwner))
			g.Expect(err).NotTo(HaveOccurred())
			live := webObject(nil, tc.entries...)
			live.Object["metadata"].(map[string]any)["labels"].(map[string]any)["tier"] = "web"
			live.Object["spec"].(map[string]any)["template"] = map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web"}}}}
			gv := &Governor{opts: Options{Owners: owners, Log: logr.Discard()}}
			fields := make([]drift.Field, 0, len(tc.pointers))
			for _, p := range tc.pointers {
				fields = append(fields, drift.Field{Pointer: p})
			}
			g.Expect(walk{g: gv, live: live}.upgrading(fields)).To(Equal(tc.want))
		})
	}
}
