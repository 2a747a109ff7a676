package governor

import (
	"context"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/decide"
)

// HoldExpiredEventReason is the Warning event of a hold that reached its
// maximum age. Its message starts with CriticalPrefix and its severity
// metadata is critical, so a notification-controller Alert pages on it the
// way it pages on critical drift.
const HoldExpiredEventReason = "HoldExpired"

// Hold expiry is time-driven: each record with a limited hold arms one
// timer, a delaying workqueue item due at its status.holdExpiresAt, and a
// worker of its own acts when it fires. Nothing polls, the live workers
// never wait on it, and it needs no render and no Git: the decision
// (decide.Expiry) reads only the record and the policy's onExpiry.

func newExpiryQueue() workqueue.TypedRateLimitingInterface[types.NamespacedName] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "reflux-expiry"})
}

// ScheduleExpiry arms the expiry timer of every record that has one due:
// the Kustomization reconciler hands it each Kustomization's records when
// it reports them, which covers a new hold, a changed limit and a restart.
// A timer already armed earlier stays; one that fires early re-arms. It
// never blocks.
func (gv *Governor) ScheduleExpiry(records []refluxv1.Drift) {
	now := gv.now()
	for i := range records {
		after, due := decide.ExpiryDue(&records[i], now)
		if !due {
			continue
		}
		gv.expiry.AddAfter(types.NamespacedName{Namespace: records[i].Namespace, Name: records[i].Name}, after)
	}
}

func (gv *Governor) processExpiry(ctx context.Context) bool {
	k, shutdown := gv.expiry.Get()
	if shutdown {
		return false
	}
	defer gv.expiry.Done(k)
	if err := gv.expire(ctx, k); err != nil {
		gv.opts.Log.Error(err, "acting on an expired hold", "record", k.String())
		gv.expiry.AddRateLimited(k)
		return true
	}
	gv.expiry.Forget(k)
	return true
}

// expire decides on one record whose timer fired, and re-arms the timer
// when the record's expiry is still ahead (it moved since the timer was
// armed).
func (gv *Governor) expire(ctx context.Context, key types.NamespacedName) error {
	rec, err := readRecord(ctx, gv.opts.Client, key.Namespace, key.Name)
	if err != nil || rec == nil {
		return err
	}
	owner := types.NamespacedName{Namespace: rec.Spec.Kustomization.Namespace, Name: rec.Spec.Kustomization.Name}
	snap, governed := gv.snapshotOf(owner)
	if !governed {
		// Not governed here (any more, or by another shard): the reconciler
		// of the reflux that governs it arms its own timer.
		return nil
	}
	p := plan{name: rec.Name, namespace: rec.Namespace, obj: rec.Spec.Object, ks: snap.gov.Kustomization, as: snap.gov.Identity}
	gvk := schema.FromAPIVersionAndKind(p.obj.APIVersion, p.obj.Kind)
	_, exists := gv.opts.Live.Get(gvk, p.obj.Namespace, p.obj.Name)
	var last *refluxv1.Drift
	err = gv.exec.withRecord(ctx, &p, func(cur *refluxv1.Drift) (decide.Decision, error) {
		d := decide.Expiry(decide.ExpiryInput{Record: cur, OnExpiry: snap.gov.Policy.Spec.ManualHotfix.OnExpiry,
			LiveExists: exists, Now: gv.now()})
		last = cur
		if d.Record != nil {
			last = d.Record
		}
		return d, nil
	})
	if err != nil {
		return err
	}
	if after, due := decide.ExpiryDue(last, gv.now()); due && after > 0 {
		gv.expiry.AddAfter(key, after)
	}
	return nil
}

// expire writes an expired hold onto its record, releases the hold when
// the policy says Release, and pages. The status goes first, as in close:
// once the record says Expired the live path never holds the object again
// for the drift that expired, so the release is final.
func (x *executor) expire(ctx context.Context, p *plan, d decide.Decision) error {
	rec := d.Record.DeepCopy()
	if err := x.writeStatus(ctx, rec, d.Record.Status); err != nil {
		return err
	}
	if err := x.hold(ctx, p, d); err != nil {
		return err
	}
	x.log.Info("hold expired", "record", rec.Name, "object", p.obj.Kind+"/"+p.obj.Namespace+"/"+p.obj.Name,
		"state", rec.Status.State, "why", d.Why)
	if d.Expired && p.ks != nil {
		expiredEvent(x.events, p, rec)
	}
	if d.RequestReconcile && p.ks != nil {
		return x.requestReconcile(ctx, p.ks)
	}
	return nil
}

// expiredEvent raises the paging event of an expired hold.
func expiredEvent(rec EventRecorder, p *plan, d *refluxv1.Drift) {
	if rec == nil {
		return
	}
	what := "kept held until a person decides (onExpiry: Alert)"
	if d.Status.State == refluxv1.DriftExpired {
		what = "released so that Flux restores Git (onExpiry: Release)"
	}
	at := ""
	if d.Status.HoldExpiresAt != nil {
		at = d.Status.HoldExpiresAt.UTC().Format(time.RFC3339)
	}
	meta := map[string]string{
		eventMetaKey(eventv1.MetaRevisionKey): d.Spec.Revision,
		eventMetaKey("reflux-severity"):       string(refluxv1.SeverityCritical),
		eventMetaKey("reflux-record"):         d.Name,
		eventMetaKey("reflux-hold-expired"):   at,
	}
	kind := "hold"
	if d.Spec.ManualHotfix {
		kind = "manual hotfix hold"
	}
	rec.AnnotatedEventf(p.ks, meta, corev1.EventTypeWarning, HoldExpiredEventReason, "%s%s %s/%s: %s reached its maximum age at %s: %s",
		CriticalPrefix, d.Spec.Object.Kind, d.Spec.Object.Namespace, d.Spec.Object.Name, kind, at, what)
}

// expiredOf counts a Kustomization's records whose hold expired, by the
// labels of reflux_hold_expired.
func expiredOf(records []refluxv1.Drift) map[[2]string]int {
	out := map[[2]string]int{}
	for i := range records {
		d := &records[i]
		mode, ok := expiredMode(d)
		if ok {
			out[[2]string{d.Spec.Object.Kind, mode}]++
		}
	}
	return out
}

// expiredMode is what was done with a record's expired hold: Alert (kept,
// still open) or Release (released, the record closed as Expired).
func expiredMode(d *refluxv1.Drift) (string, bool) {
	if !d.DeletionTimestamp.IsZero() {
		return "", false
	}
	switch {
	case d.Status.State == refluxv1.DriftExpired:
		return string(refluxv1.ExpiryRelease), true
	case d.Status.HoldExpiresAt != nil && d.Status.HeldSince != nil &&
		apimeta.IsStatusConditionTrue(d.Status.Conditions, refluxv1.HoldExpiredCondition):
		return string(refluxv1.ExpiryAlert), true
	}
	return "", false
}
