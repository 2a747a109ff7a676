package helmlive

import (
	"context"
	"errors"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/release"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

var deployment = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func rendered(labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(deployment)
	u.SetNamespace("web")
	u.SetName("web")
	u.SetLabels(labels)
	return u
}

var released = map[string]string{NameLabel: "web", NamespaceLabel: "apps"}

func TestReleaseOf(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   types.NamespacedName
		ok     bool
	}{
		{"helm-controller's labels", released, types.NamespacedName{Namespace: "apps", Name: "web"}, true},
		{"a name alone", map[string]string{NameLabel: "web"}, types.NamespacedName{Name: "web"}, false},
		{"kustomize-controller's labels", map[string]string{intake.FluxNameLabel: "web", intake.FluxNamespaceLabel: "apps"},
			types.NamespacedName{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			id, ok := ReleaseOf(rendered(tt.labels))
			g.Expect(id).To(Equal(tt.want))
			g.Expect(ok).To(Equal(tt.ok))
		})
	}
}

func TestGoverns(t *testing.T) {
	for annotation, want := range map[string]bool{"": true, refluxv1.ReverseSyncEnabled: true, refluxv1.ReverseSyncDisabled: false} {
		hr := &helmv2.HelmRelease{}
		if annotation != "" {
			hr.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: annotation}
		}
		if got := Governs(hr); got != want {
			t.Errorf("Governs with %q = %v, want %v", annotation, got, want)
		}
	}
}

// TestEnqueueKeepsTheEarliestChange: changes of one object coalesce into
// one queued key that keeps the time of the earliest timed change, which
// a listed or deleted object (untimed) never erases; objects of no
// release are not queued.
func TestEnqueueKeepsTheEarliestChange(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Unix(1000, 0)
	gv := &Governor{queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[intake.Key]()),
		seen: map[intake.Key]time.Time{}, owner: map[intake.Key]types.NamespacedName{}, deleted: map[intake.Key]deletion{},
		opts: Options{Now: func() time.Time { return t0.Add(3 * time.Second) }}}
	defer gv.queue.ShutDown()
	obj := rendered(released)
	k := intake.KeyOf(deployment, obj)

	gv.OnLiveAdd(deployment, obj, t0.Add(-time.Hour))
	g.Expect(gv.seen).To(HaveKeyWithValue(k, time.Time{}), "a listed object is not a timed change")
	gv.OnLiveUpdate(deployment, obj, obj, t0.Add(time.Second))
	gv.OnLiveUpdate(deployment, obj, obj, t0)
	gv.OnLiveUpdate(deployment, obj, obj, t0.Add(2*time.Second))
	gv.OnLiveDelete(deployment, obj)
	g.Expect(gv.seen).To(HaveKeyWithValue(k, t0), "the earliest change's time")
	g.Expect(gv.owner).To(HaveKeyWithValue(k, types.NamespacedName{Namespace: "apps", Name: "web"}))
	g.Expect(gv.queue.Len()).To(Equal(1), "one key per object")
	g.Expect(gv.deleted).To(HaveKeyWithValue(k, deletion{last: obj, seen: t0.Add(3 * time.Second)}), "the deletion is kept to decide")
	gv.OnLiveAdd(deployment, obj, t0)
	g.Expect(gv.deleted).NotTo(HaveKey(k), "created again: no deletion is left to decide")

	gv.OnLiveUpdate(deployment, rendered(nil), rendered(map[string]string{intake.FluxNameLabel: "web"}), t0)
	g.Expect(gv.queue.Len()).To(Equal(1), "a Kustomization's object is not a release's")
}

// TestOnRecordQueuesOnlyHelmRecords: a dismissed record of a release's
// object brings its object back, with the HelmRelease that names its
// record once the object is gone; a Kustomization's record is not this
// path's.
func TestOnRecordQueuesOnlyHelmRecords(t *testing.T) {
	g := NewWithT(t)
	gv := &Governor{queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[intake.Key]()),
		seen: map[intake.Key]time.Time{}, owner: map[intake.Key]types.NamespacedName{}}
	defer gv.queue.ShutDown()
	rec := &refluxv1.Drift{Spec: refluxv1.DriftSpec{Object: refluxv1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment",
		Namespace: "web", Name: "web"}}}
	gv.OnRecord(rec)
	g.Expect(gv.queue.Len()).To(BeZero())
	rec.Spec.HelmRelease = &refluxv1.HelmReleaseRef{Namespace: "apps", Name: "web"}
	gv.OnRecord(rec)
	g.Expect(gv.queue.Len()).To(Equal(1))
	g.Expect(gv.owner).To(HaveKeyWithValue(intake.Key{GVK: deployment, Namespace: "web", Name: "web"},
		types.NamespacedName{Namespace: "apps", Name: "web"}))
}

// TestReleasedRevisitsOnANewRelease: a new release of a HelmRelease
// brings back every object of it seen, since an upgrade that leaves an
// object as it was sends no watch event; the same release again, or
// another HelmRelease's, brings back none.
func TestReleasedRevisitsOnANewRelease(t *testing.T) {
	g := NewWithT(t)
	gv := &Governor{queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[intake.Key]()),
		seen: map[intake.Key]time.Time{}, owner: map[intake.Key]types.NamespacedName{}, release: map[types.NamespacedName]string{},
		health: map[types.NamespacedName]Health{}}
	defer gv.queue.ShutDown()
	id := types.NamespacedName{Namespace: "apps", Name: "web"}
	k := intake.Key{GVK: deployment, Namespace: "web", Name: "web"}
	other := intake.Key{GVK: deployment, Namespace: "web", Name: "db"}
	gv.owner[k] = id
	gv.owner[other] = types.NamespacedName{Namespace: "apps", Name: "db"}
	hr := &helmv2.HelmRelease{}
	hr.Namespace, hr.Name = id.Namespace, id.Name
	drain := func() []intake.Key {
		var out []intake.Key
		for gv.queue.Len() > 0 {
			key, _ := gv.queue.Get()
			out = append(out, key)
			gv.queue.Done(key)
		}
		return out
	}

	gv.Released(id, hr)
	g.Expect(drain()).To(BeEmpty(), "no release yet")
	hr.Status.History = helmv2.Snapshots{{Name: "web", Namespace: "web", Version: 1}}
	gv.Released(id, hr)
	g.Expect(drain()).To(Equal([]intake.Key{k}))
	gv.Released(id, hr)
	g.Expect(drain()).To(BeEmpty(), "the same release")
	hr.Status.History = append(hr.Status.History, &helmv2.Snapshot{Name: "web", Namespace: "web", Version: 2})
	gv.Released(id, hr)
	g.Expect(drain()).To(Equal([]intake.Key{k}), "an upgrade")
	gv.Released(id, nil)
	g.Expect(gv.release).NotTo(HaveKey(id), "forgotten with the HelmRelease")
}

// TestRetryAttributionIsBounded: an object whose writer the audit log has
// not named is looked at again, at most intake.AttributionRetries times,
// and a look that finds every user ends the count.
func TestRetryAttributionIsBounded(t *testing.T) {
	g := NewWithT(t)
	gv := &Governor{queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[intake.Key]()),
		attribution: map[intake.Key]int{}}
	defer gv.queue.ShutDown()
	k := intake.Key{GVK: deployment, Namespace: "web", Name: "web"}
	for range intake.AttributionRetries + 3 {
		gv.retryAttribution(k, true)
	}
	g.Expect(gv.attribution).To(HaveKeyWithValue(k, intake.AttributionRetries), "given up after the bound")
	gv.retryAttribution(k, false)
	g.Expect(gv.attribution).NotTo(HaveKey(k), "found")
	gv.retryAttribution(k, true)
	g.Expect(gv.attribution).To(HaveKeyWithValue(k, 1), "a new change is looked at again")
}

// missingStorage is Helm's storage with every release Secret gone.
type missingStorage struct{}

func (missingStorage) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
}

// TestHealthFollowsTheLatestRelease: a release that cannot be read, and a
// chart that does not render, are kept per HelmRelease for its condition
// and said once each; a new release clears the old chart's failure, and
// a chart failure of a release no longer the latest is not kept.
func TestHealthFollowsTheLatestRelease(t *testing.T) {
	g := NewWithT(t)
	gv := &Governor{releases: newReleases(missingStorage{}, nil), health: map[types.NamespacedName]Health{}}
	id := types.NamespacedName{Namespace: "apps", Name: "web"}
	var heard []types.NamespacedName
	gv.OnHealth(func(id types.NamespacedName) { heard = append(heard, id) })
	hr := &helmv2.HelmRelease{}
	hr.Namespace, hr.Name = id.Namespace, id.Name

	_, err := gv.latest(context.Background(), hr)
	g.Expect(errors.Is(err, errNotYet)).To(BeTrue())
	g.Expect(gv.Health(id)).To(Equal(Health{}), "no release yet is not a failure")
	g.Expect(heard).To(BeEmpty())

	hr.Status.History = helmv2.Snapshots{{Name: "web", Namespace: "apps", Version: 1}}
	_, err = gv.latest(context.Background(), hr)
	g.Expect(err).To(HaveOccurred())
	g.Expect(gv.Health(id).Release).To(Equal("apps/web.v1"))
	g.Expect(gv.Health(id).ReleaseErr).To(MatchError(ContainSubstring("not found")))
	_, _ = gv.latest(context.Background(), hr)
	g.Expect(heard).To(Equal([]types.NamespacedName{id}), "said once")

	v1 := &made{owner: id, ref: release.Ref{Name: "web", Namespace: "apps", Version: 1}}
	gv.setHealth(id, func(h *Health) { h.ReleaseErr = nil })
	gv.chartRendered(v1, errors.New("lookup failed"))
	g.Expect(gv.Health(id).ChartErr).To(MatchError("lookup failed"))
	g.Expect(heard).To(HaveLen(3))

	gv.setHealth(id, func(h *Health) { h.Release, h.ChartErr = "apps/web.v2", nil })
	gv.chartRendered(v1, errors.New("lookup failed"))
	g.Expect(gv.Health(id)).To(Equal(Health{Release: "apps/web.v2"}), "v1's chart is not the latest's")

	gv.Released(id, nil)
	g.Expect(gv.health).NotTo(HaveKey(id), "forgotten with the HelmRelease")
}

// TestDenyAndAllow: a refusal of the HelmRelease's ServiceAccount stands
// in its Health, and the condition hears of it, until the object is
// acted on again or left; forgetting what was never refused changes
// nothing and makes no entry for the HelmRelease.
func TestDenyAndAllow(t *testing.T) {
	g := NewWithT(t)
	gv := &Governor{health: map[types.NamespacedName]Health{}}
	var heard int
	gv.OnHealth(func(types.NamespacedName) { heard++ })
	id := types.NamespacedName{Namespace: "apps", Name: "web"}
	f := &tenancy.ForbiddenError{User: "system:serviceaccount:apps:tenant", Verb: "patch", Resource: "deployments", Group: "apps",
		Namespace: "shared"}

	gv.deny(id, "Deployment/shared/web", nil)
	g.Expect(gv.health).To(BeEmpty(), "nothing refused, nothing kept")
	g.Expect(heard).To(BeZero())

	gv.deny(id, "Deployment/shared/web", f)
	gv.deny(id, "Service/shared/web", f)
	seen := gv.Health(id)
	g.Expect(seen.Denied).To(HaveLen(2))
	g.Expect(heard).To(Equal(2))
	gv.deny(id, "Deployment/shared/web", f)
	g.Expect(heard).To(Equal(2), "the same refusal again is no change")

	gv.deny(id, "Deployment/shared/web", nil)
	g.Expect(gv.Health(id).Denied).To(HaveKey("Service/shared/web"))
	g.Expect(gv.Health(id).Denied).NotTo(HaveKey("Deployment/shared/web"))
	g.Expect(seen.Denied).To(HaveLen(2), "a Health read before is not changed in place")
	g.Expect(heard).To(Equal(3))
}
