package governor

import (
	"context"
	"errors"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/helmlive"
	"github.com/reflux-dev/reflux/reverse/intake"
)

// What the cluster side calls. The watch handlers run on informer and
// webhook goroutines and only queue (intake); Publish, Report and
// ScheduleExpiry run in the Kustomization reconciler and never wait on
// slow work.

// Status is what the engine knows of a Kustomization, for its conditions.
type Status struct {
	// Current is true when the render of the applied revision is what
	// live changes are evaluated against.
	Current bool
	// RollingOut is true while Flux applies a revision or spec reflux has
	// not rendered: live changes wait (and are held where Flux reverts).
	RollingOut bool
	// Parked counts changes waiting for a current render; Held those of
	// them held meanwhile.
	Parked, Held int
	// Checked is true once every rendered object was checked against the
	// current render; Unchecked counts those still to check.
	Checked   bool
	Unchecked int
	// WriteBack is the last write-back's outcome, if one ran.
	WriteBack *WriteBackStatus
	// Denied are the changes kept because the Kustomization's identity
	// lacks a permission, by object.
	Denied []Denial
}

func (gv *Governor) status(id types.NamespacedName, s intake.Status) Status {
	out := Status{Current: s.Current, RollingOut: s.RollingOut, Parked: s.Parked, Held: s.Held, Checked: s.Checked,
		Unchecked: s.Unchecked, Denied: s.Denied}
	if gv.sched != nil {
		out.WriteBack = gv.sched.Status(id)
	}
	return out
}

// Publish makes g the governed state of its Kustomization, with render the
// latest render the caller has (nil while none is ready). When the render
// is current, parked changes are evaluated and a resync starts if one is
// due. It never waits on slow work.
func (gv *Governor) Publish(g *Governed, render *desired.Render) Status {
	st := gv.intake.Publish(g, render)
	gv.markWriteDown(g.Key())
	if st.Current {
		gv.markReplay(g.Key())
	}
	return gv.status(g.Key(), st)
}

// Status returns what the engine knows of a Kustomization.
func (gv *Governor) Status(id types.NamespacedName) (Status, bool) {
	s, ok := gv.intake.Status(id)
	if !ok {
		return Status{}, false
	}
	return gv.status(id, s), true
}

// Report hands the engine a Kustomization's records, as the reconciler
// listed them from the cache: a write-back or a branch check is queued on
// the repository's worker when one is due.
func (gv *Governor) Report(id types.NamespacedName, records []refluxv1.Drift) {
	if gv.sched != nil {
		gv.sched.Report(id, records)
	}
}

// ScheduleExpiry arms the expiry timer of every record that has one due,
// among those whose object lives in this engine's cluster: a record of a
// remote cluster's Helm release is expired there, where its hold is.
func (gv *Governor) ScheduleExpiry(records []refluxv1.Drift) {
	mine := make([]refluxv1.Drift, 0, len(records))
	for _, d := range records {
		if remoteHelm(&d) == gv.remoteHelm() {
			mine = append(mine, d)
		}
	}
	gv.timers.Schedule(mine)
}

// remoteHelm reports whether d is of a Helm release installed in a remote
// cluster.
func remoteHelm(d *refluxv1.Drift) bool {
	return d.Spec.HelmRelease != nil && d.Spec.HelmRelease.Cluster != ""
}

// remoteHelm reports whether the engine is a remote cluster's Helm
// engine (HelmOptions.Governance), which holds only such records.
func (gv *Governor) remoteHelm() bool {
	return gv.opts.Helm != nil && gv.opts.Helm.Governance != nil
}

// Snapshot returns the state of a Kustomization the engine governs: a
// remote cluster's Helm engine reads the hub's (HelmOptions.Governance).
func (gv *Governor) Snapshot(id types.NamespacedName) (reverse.Snapshot, bool) {
	return gv.intake.Snapshot(id)
}

// Governs reports whether the engine governs a Kustomization now.
func (gv *Governor) Governs(id types.NamespacedName) bool {
	return gv.intake.Governs(id)
}

// Kinds are the kinds of the objects of hr's latest release, which the
// Helm-labelled live watches must cover (helmlive).
func (gv *Governor) Kinds(ctx context.Context, hr *helmv2.HelmRelease) ([]schema.GroupVersionKind, error) {
	if gv.helm == nil {
		return nil, errors.New("the engine does not govern HelmReleases")
	}
	return gv.helm.Kinds(ctx, hr)
}

// Released tells the Helm path of a HelmRelease read, nil once gone, so
// a new release has its objects compared again (helmlive).
func (gv *Governor) Released(id types.NamespacedName, hr *helmv2.HelmRelease) {
	if gv.helm != nil {
		gv.helm.Released(id, hr)
	}
}

// HelmHealth is what keeps the objects of the HelmRelease id from being
// evaluated or traced (helmlive), for its ReverseDrifted condition.
func (gv *Governor) HelmHealth(id types.NamespacedName) helmlive.Health {
	if gv.helm == nil {
		return helmlive.Health{}
	}
	return gv.helm.Health(id)
}

// OnHelmHealth has fn hear of each change of a HelmRelease's health.
func (gv *Governor) OnHelmHealth(fn func(types.NamespacedName)) {
	if gv.helm != nil {
		gv.helm.OnHealth(fn)
	}
}

// OnLiveUpdate is the live watches' update handler (intake).
func (gv *Governor) OnLiveUpdate(gvk schema.GroupVersionKind, old, cur *unstructured.Unstructured, seen time.Time) {
	gv.intake.OnLiveUpdate(gvk, old, cur, seen)
}

// OnLiveAdd is the live watches' add handler (intake).
func (gv *Governor) OnLiveAdd(gvk schema.GroupVersionKind, cur *unstructured.Unstructured, seen time.Time) {
	gv.intake.OnLiveAdd(gvk, cur, seen)
}

// OnLiveDelete is the live watches' delete handler (intake).
func (gv *Governor) OnLiveDelete(gvk schema.GroupVersionKind, last *unstructured.Unstructured) {
	gv.intake.OnLiveDelete(gvk, last)
}

// OnRecord is called for every change of a Drift record (intake).
func (gv *Governor) OnRecord(d *refluxv1.Drift) {
	if d.Spec.HelmRelease != nil {
		// A Helm release's object: the Kustomization's render never
		// describes it, so only the Helm path may decide for it.
		if gv.helm != nil {
			gv.helm.OnRecord(d)
		}
		return
	}
	gv.intake.OnRecord(d)
}

// OnAuditedSecretWrite takes a write to a Secret from the audit webhook
// (intake).
func (gv *Governor) OnAuditedSecretWrite(w AuditedWrite) {
	gv.intake.OnAuditedSecretWrite(w)
}

// Types of the engine's stages, named here for the cluster side.
type (
	// Governed is what the engine needs to know of one governed
	// Kustomization.
	Governed = reverse.Governed
	// AuditedWrite is a write as the audit log tells it.
	AuditedWrite = reverse.AuditedWrite
	// Deleter is who deleted an object, from the audit log.
	Deleter = reverse.Deleter
	// Denial is a live change the engine cannot evaluate or hold because
	// the Kustomization's identity lacks a permission.
	Denial = intake.Denial
)

// Flux's owner labels, which the live watches select on.
const (
	FluxNameLabel      = intake.FluxNameLabel
	FluxNamespaceLabel = intake.FluxNamespaceLabel
)

// RollingOut reports whether Flux is applying something reflux has not
// rendered.
func RollingOut(g *Governed) bool { return reverse.RollingOut(g) }

func keyOfRef(o refluxv1.ObjectRef) intake.Key {
	return intake.Key{GVK: schema.FromAPIVersionAndKind(o.APIVersion, o.Kind), Namespace: o.Namespace, Name: o.Name}
}

// Busy reports whether the live path is working through a burst
// (intake.Busy): reporting and write-back yield to it.
func (gv *Governor) Busy() bool { return gv.intake.Busy() }
