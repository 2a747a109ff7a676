package branches

import (
	"context"
	"errors"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
)

// fingerprintNone names the empty drift set: a request that asks the
// engine to take every edit of reflux's out of a kind's open branch.
const fingerprintNone = "none"

// write runs one branch's write-back, then makes sure its pull request
// says what the branch carries.
func (s *session) write(ctx context.Context, grp group) (reverse.BranchResult, error) {
	gitSpec := s.set.Policy.Spec.Git
	ed := &editor{ctx: ctx, set: s.set, fields: grp.fields, allowShared: gitSpec.AllowSharedWrites, render: s.h.Render,
		values: s.h.Values}
	if enc := gitSpec.Encryption; enc != nil {
		ed.recipients.Age = enc.Age
		for _, k := range enc.PGP {
			ed.recipients.OpenPGP = append(ed.recipients.OpenPGP, []byte(k))
		}
	}
	req := s.request(grp.action, grp.fingerprint(), grp.messageFields(), ed.apply)
	if s.set.Intent != nil {
		req.BeforePush = func(ctx context.Context, branch string) error {
			// Only the records whose fields made it into the commit are on
			// the branch: Apply has run, and its refusals are known.
			return s.set.Intent(ctx, branch, req.Fingerprint, grp.without(ed.refused).written())
		}
	}
	res, err := s.h.Git.Run(ctx, req)
	p := reverse.BranchResult{Action: grp.action, Branch: res.Branch, Commit: res.Commit, Outcome: string(res.Outcome),
		Reason: res.Reason, Fingerprint: req.Fingerprint, Records: grp.records()}
	if err != nil {
		return s.failed(p, err)
	}
	eff := grp.without(ed.refused)
	if len(eff.refused) > 0 {
		p.Reason = joinReasons(p.Reason, "not written: "+describe(eff.refused))
	}
	switch res.Outcome {
	case writeback.Obsolete:
		// Every change it proposes is in the source branch already.
		return s.close(ctx, p, "the source branch already has every change it proposed")
	case writeback.BranchPushed, writeback.UpToDate:
		p.Records, p.NotWritten = eff.written(), eff.notWritten()
	default:
		return p, nil
	}
	s.h.Log.Info("write-back", "kustomization", s.set.Kustomization.Namespace+"/"+s.set.Kustomization.Name,
		"action", grp.action, "outcome", p.Outcome, "branch", p.Branch, "commit", p.Commit, "reason", p.Reason)
	if p.Branch == "" || gitSpec.PullRequest == nil {
		return p, nil
	}
	fg, fgErr := s.forge(ctx)
	if fgErr != nil {
		p.Outcome, p.Reason = forgeOutcome(fgErr), joinReasons(p.Reason, fgErr.Error())
		if forge.Unauthorized(fgErr) {
			return p, nil
		}
		return p, errors.Join(errForge, fgErr)
	}
	return p, s.h.openPullRequest(ctx, fg, s.set, eff, &p)
}

// request is the engine's request for one kind's branch.
func (s *session) request(action refluxv1.Action, fingerprint string, fields []message.Field, apply writeback.ApplyFunc) writeback.Request {
	gitSpec := s.set.Policy.Spec.Git
	kind := writeback.KindMerge
	if action == refluxv1.AlertAction {
		kind = writeback.KindAlert
	}
	return writeback.Request{
		RepoURL: s.set.Source.URL, Auth: s.auth, SourceBranch: s.set.Source.Branch, BranchPrefix: gitSpec.BranchPrefix,
		Kustomization: writeback.Kustomization{Namespace: s.set.Kustomization.Namespace, Name: s.set.Kustomization.Name},
		Fingerprint:   fingerprint, Kind: kind,
		Author: writeback.Author{Name: gitSpec.Author.Name, Email: gitSpec.Author.Email},
		Signer: s.signer, Fields: fields, Apply: apply, MessageTemplate: gitSpec.CommitMessageTemplate,
	}
}

// failed reports a run that ended in an error. A GitError (and a
// superseded set) is returned, so the caller retries; a request reflux
// itself built wrong is a configuration problem a retry does not fix.
func (s *session) failed(p reverse.BranchResult, err error) (reverse.BranchResult, error) {
	if p.Outcome == "" {
		p.Outcome = refluxv1.GitErrorReason
	}
	p.Reason = joinReasons(p.Reason, err.Error())
	if errors.Is(err, writeback.ErrGit) || errors.Is(err, writeback.ErrSuperseded) || p.Outcome == refluxv1.GitErrorReason {
		return p, err
	}
	p.Outcome = refluxv1.RefusedReason
	s.h.Log.Info("write-back", "kustomization", s.set.Kustomization.Namespace+"/"+s.set.Kustomization.Name,
		"action", p.Action, "outcome", p.Outcome, "branch", p.Branch, "reason", p.Reason)
	return p, nil
}
