package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/patch"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
)

// writeTarget resolves what write-back needs from the cluster: the
// GitRepository, its auth Secret and the policy's signing Secret. Reading
// here keeps reverse/ free of cluster access.
func (r *KustomizationReconciler) writeTarget(ctx context.Context, g *Governed, set *reverse.DriftSet) error {
	ks := g.Kustomization
	if g.Policy.Spec.Git.ReportOnly || ks.Spec.SourceRef.Kind != sourcev1.GitRepositoryKind {
		return nil
	}
	ns := ks.Spec.SourceRef.Namespace
	if ns == "" {
		ns = ks.Namespace
	}
	repo := &sourcev1.GitRepository{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: ks.Spec.SourceRef.Name}, repo); err != nil {
		return fmt.Errorf("getting GitRepository %s/%s: %w", ns, ks.Spec.SourceRef.Name, err)
	}
	src := &reverse.GitSource{URL: repo.Spec.URL}
	if repo.Spec.Reference != nil {
		src.Branch = repo.Spec.Reference.Branch
	}
	if repo.Spec.SecretRef != nil {
		data, err := r.secretData(ctx, ns, repo.Spec.SecretRef.Name)
		if err != nil {
			return err
		}
		src.AuthData = data
	}
	set.Source = src
	if err := r.liveSecrets(ctx, set); err != nil {
		return err
	}
	if key := g.Policy.Spec.Git.SigningKey; key != nil {
		data, err := r.secretData(ctx, g.Policy.Namespace, key.SecretRef.Name)
		if err != nil {
			return err
		}
		set.SigningKey = data
	}
	return nil
}

func (r *KustomizationReconciler) secretData(ctx context.Context, ns, name string) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return nil, fmt.Errorf("getting Secret %s/%s: %w", ns, name, err)
	}
	return s.Data, nil
}

// recordProposals writes what write-back did back to the cluster: records
// of pushed branches become Proposed, the Kustomization gets a
// ReverseSynced condition, and events and metrics follow.
func (r *KustomizationReconciler) recordProposals(ctx context.Context, g *Governed, open []refluxv1.Drift,
	proposals []reverse.Proposal) error {
	if len(proposals) == 0 {
		return nil
	}
	byName := map[string]*refluxv1.Drift{}
	for i := range open {
		byName[open[i].Name] = &open[i]
	}
	var errs []error
	for _, p := range proposals {
		r.Metrics.observeWriteBack(p.Outcome)
		if p.Outcome != refluxv1.BranchPushedReason && p.Outcome != refluxv1.UpToDateReason {
			continue
		}
		for _, name := range p.Records {
			if d, ok := byName[name]; ok {
				if err := r.propose(ctx, d, p); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	r.writeBackEvents(g, proposals)
	if err := r.patchReverseSynced(ctx, g, proposals); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("recording write-back: %v", errs)
	}
	return nil
}

// propose marks a record Proposed with its branch. The hold stays: the
// live value must survive until a reviewer merges or closes the branch.
func (r *KustomizationReconciler) propose(ctx context.Context, d *refluxv1.Drift, p reverse.Proposal) error {
	if d.Status.State == refluxv1.DriftProposed && d.Status.Branch == p.Branch && d.Status.Commit == p.Commit {
		return nil
	}
	// A merge patch of just these fields: the live engine may have written
	// the record since it was listed, and its changes must stay.
	base := d.DeepCopy()
	d = d.DeepCopy()
	d.Status.State = refluxv1.DriftProposed
	d.Status.Branch, d.Status.Commit = p.Branch, p.Commit
	if err := r.Status().Patch(ctx, d, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("marking drift record %s proposed: %w", d.Name, err)
	}
	return nil
}

// patchReverseSynced summarises the proposals in one condition: the worst
// outcome decides its status and reason.
func (r *KustomizationReconciler) patchReverseSynced(ctx context.Context, g *Governed, proposals []reverse.Proposal) error {
	worst := proposals[0]
	var parts []string
	for _, p := range proposals {
		if outcomeRank(p.Outcome) > outcomeRank(worst.Outcome) {
			worst = p
		}
		part := string(p.Outcome)
		if p.Action != "" {
			part = fmt.Sprintf("%s: %s", p.Action, p.Outcome)
		}
		if p.Branch != "" {
			part += fmt.Sprintf(" branch %s", p.Branch)
		}
		if p.Commit != "" {
			part += fmt.Sprintf(" at %s", shortSHA(p.Commit))
		}
		if p.Reason != "" && (p.Branch == "" || (p.Outcome != refluxv1.BranchPushedReason && p.Outcome != refluxv1.UpToDateReason)) {
			part += ": " + p.Reason
		}
		parts = append(parts, part)
	}
	status := metav1.ConditionTrue
	if outcomeRank(worst.Outcome) > outcomeRank(refluxv1.UpToDateReason) {
		status = metav1.ConditionFalse
	}
	ks := g.Kustomization.DeepCopy()
	if err := r.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
		return client.IgnoreNotFound(err)
	}
	helper, err := patch.NewHelper(ks, r.Client)
	if err != nil {
		return err
	}
	conditions.Set(ks, &metav1.Condition{Type: refluxv1.ReverseSyncedCondition, Status: status, Reason: worst.Outcome,
		Message: strings.Join(parts, "; "), ObservedGeneration: ks.Generation})
	return helper.Patch(ctx, ks, patch.WithOwnedConditions{Conditions: []string{refluxv1.ReverseSyncedCondition}},
		patch.WithFieldOwner(refluxv1.FieldManager))
}

func (r *KustomizationReconciler) writeBackEvents(g *Governed, proposals []reverse.Proposal) {
	if r.Events == nil {
		return
	}
	for _, p := range proposals {
		eventType := corev1.EventTypeNormal
		if outcomeRank(p.Outcome) > outcomeRank(refluxv1.ReportOnlyReason) {
			eventType = corev1.EventTypeWarning
		}
		if p.Outcome == refluxv1.UpToDateReason || p.Outcome == refluxv1.ReportOnlyReason {
			continue // nothing happened worth a notification
		}
		meta := map[string]string{eventMetaKey("revision"): g.Render.Revision}
		if p.Commit != "" {
			meta[eventMetaKey("reflux-commit")] = p.Commit
		}
		if p.Branch != "" {
			meta[eventMetaKey("reflux-branch")] = p.Branch
		}
		msg := fmt.Sprintf("%s write-back %s", p.Action, p.Outcome)
		if p.Branch != "" {
			msg += " on " + p.Branch
		}
		if p.Reason != "" {
			msg += ": " + p.Reason
		}
		r.Events.AnnotatedEventf(g.Kustomization, meta, eventType, p.Outcome, "%s", msg)
	}
}

// outcomeRank orders outcomes from best to worst.
func outcomeRank(o string) int {
	switch o {
	case refluxv1.UpToDateReason:
		return 1
	case refluxv1.BranchPushedReason:
		return 0
	case refluxv1.ReportOnlyReason:
		return 2
	case refluxv1.RefusedReason:
		return 3
	case refluxv1.ConflictReason:
		return 4
	default: // GitError and anything unknown
		return 5
	}
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// liveSecrets reads the held live Secrets the records name: records mask
// Secret values, and write-back encrypts the live ones with SOPS. Only
// Secrets with fields bound for Git are read.
func (r *KustomizationReconciler) liveSecrets(ctx context.Context, set *reverse.DriftSet) error {
	for _, d := range set.Records {
		o := d.Spec.Object
		if o.Kind != "Secret" || o.APIVersion != "v1" || d.Spec.ManualHotfix {
			continue
		}
		data, err := r.secretData(ctx, o.Namespace, o.Name)
		if err != nil {
			if apierrors.IsNotFound(errors.Unwrap(err)) {
				continue // gone: write-back refuses the fields with a reason
			}
			return err
		}
		if set.LiveSecrets == nil {
			set.LiveSecrets = map[string]map[string][]byte{}
		}
		set.LiveSecrets[o.Namespace+"/"+o.Name] = data
	}
	return nil
}
