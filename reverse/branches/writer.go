package branches

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/go-logr/logr"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/forge"
	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/signing"
)

// Git is what the Writer needs of the write-back engine.
type Git interface {
	Run(ctx context.Context, req writeback.Request) (writeback.Result, error)
	ListBranches(ctx context.Context, repo writeback.Repo, prefix, source string) ([]writeback.BranchState, error)
	DeleteMerged(ctx context.Context, repo writeback.Repo, prefix, source, name string) error
	DeleteClosed(ctx context.Context, repo writeback.Repo, prefix, source, name, commit string) error
}

var _ Git = &writeback.Engine{}

// Writer writes a drift set's fields to signed branches and follows what
// reviewers do with them.
type Writer struct {
	Git Git
	Log logr.Logger
	// Render builds source trees to verify edits; nil is kustomize.Build.
	// A set's applied render stands in for the tree before the edits, so
	// an attempt builds once, to verify.
	Render func(context.Context, kustomize.BuildOptions) (*kustomize.Result, error)
	// Forges connects to the forge of a policy's spec.git.pullRequest;
	// nil is forge.New.
	Forges func(context.Context, forge.Options) (Forge, error)
}

// Write writes the set's Merge fields and Alert fields to their
// branches. A GitError is returned as an error too, so the caller backs
// off and retries; every other outcome is a decision reported in the
// results. Before each push, set.Intent records where the push goes.
func (h *Writer) Write(ctx context.Context, set reverse.DriftSet) ([]reverse.BranchResult, error) {
	if set.Policy == nil {
		return nil, errors.New("drift set has no policy")
	}
	gitSpec := set.Policy.Spec.Git
	if gitSpec.ReportOnly {
		return []reverse.BranchResult{{Outcome: refluxv1.ReportOnlyReason, Reason: "policy is report-only: nothing is written to Git"}}, nil
	}
	encrypt := gitSpec.Encryption != nil && len(gitSpec.Encryption.Age)+len(gitSpec.Encryption.PGP) > 0
	groups := split(set.Records, gitSpec.AlertBranches != "None", encrypt)
	if len(groups) == 0 {
		return nil, nil
	}
	if set.Source == nil || set.Source.Branch == "" {
		return refuseAll(groups, "the Kustomization's source is not a GitRepository with a branch reflux can write beside"), nil
	}
	auth, err := git.NewAuth(set.Source.URL, set.Source.AuthData)
	if err != nil {
		return refuseAll(groups, fmt.Sprintf("GitRepository credentials: %v", err)), nil
	}
	var signer signing.Signer
	if set.SigningKey != nil {
		if signer, err = signing.FromSecret(set.SigningKey); err != nil {
			return refuseAll(groups, fmt.Sprintf("signing key: %v", err)), nil
		}
	}
	var proposals []reverse.BranchResult
	var errs []error
	var fg Forge
	var fgErr error
	for _, grp := range groups {
		p, err := h.write(ctx, set, grp, auth, signer)
		if err == nil && p.Branch != "" && (p.Outcome == refluxv1.BranchPushedReason || p.Outcome == refluxv1.UpToDateReason) &&
			gitSpec.PullRequest != nil {
			if fg == nil && fgErr == nil {
				fg, fgErr = h.connect(ctx, set)
			}
			switch {
			case fgErr != nil:
				p.Outcome, p.Reason = refluxv1.PullRequestFailedReason, joinReasons(p.Reason, fgErr.Error())
				if !forge.Unauthorized(fgErr) {
					err = fmt.Errorf("%w: %w", errForge, fgErr)
				}
			default:
				err = h.openPullRequest(ctx, fg, set, grp, &p)
			}
		}
		proposals = append(proposals, p)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return proposals, errors.Join(errs...)
}

// write runs one branch's write-back.
func (h *Writer) write(ctx context.Context, set reverse.DriftSet, grp group, auth *git.AuthOptions,
	signer signing.Signer) (reverse.BranchResult, error) {
	p := reverse.BranchResult{Action: grp.action, Records: grp.records()}
	if len(grp.fields) == 0 {
		p.Outcome, p.Reason = refluxv1.RefusedReason, grp.refusals()
		return p, nil
	}
	gitSpec := set.Policy.Spec.Git
	editor := &editor{ctx: ctx, set: set, fields: grp.fields, allowShared: gitSpec.AllowSharedWrites, render: h.Render}
	if enc := gitSpec.Encryption; enc != nil {
		editor.recipients.Age = enc.Age
		for _, k := range enc.PGP {
			editor.recipients.OpenPGP = append(editor.recipients.OpenPGP, []byte(k))
		}
	}
	kind := writeback.KindMerge
	if grp.action == refluxv1.AlertAction {
		kind = writeback.KindAlert
	}
	req := writeback.Request{
		RepoURL: set.Source.URL, Auth: auth, SourceBranch: set.Source.Branch, BranchPrefix: gitSpec.BranchPrefix,
		Kustomization: writeback.Kustomization{Namespace: set.Kustomization.Namespace, Name: set.Kustomization.Name},
		Fingerprint:   grp.fingerprint(), Kind: kind,
		Author: writeback.Author{Name: gitSpec.Author.Name, Email: gitSpec.Author.Email},
		Signer: signer, Fields: grp.messageFields(), Apply: editor.apply,
		MessageTemplate: gitSpec.CommitMessageTemplate,
	}
	if set.Intent != nil {
		records := grp.records()
		req.BeforePush = func(ctx context.Context, branch string) error {
			return set.Intent(ctx, branch, req.Fingerprint, records)
		}
	}
	res, err := h.Git.Run(ctx, req)
	p.Branch, p.Commit, p.Outcome, p.Reason = res.Branch, res.Commit, string(res.Outcome), res.Reason
	p.Fingerprint = req.Fingerprint
	if refused := append(grp.refused, editor.refused...); len(refused) > 0 && err == nil {
		p.Reason = joinReasons(p.Reason, "not written: "+describe(refused))
	}
	if err != nil {
		if p.Outcome == "" {
			p.Outcome = refluxv1.GitErrorReason
		}
		p.Reason = joinReasons(p.Reason, err.Error())
		if errors.Is(err, writeback.ErrGit) || p.Outcome == refluxv1.GitErrorReason {
			return p, err
		}
		// A request reflux itself built wrong is a configuration problem,
		// not something a retry fixes.
		p.Outcome = refluxv1.RefusedReason
	}
	h.Log.Info("write-back", "kustomization", set.Kustomization.Namespace+"/"+set.Kustomization.Name,
		"action", grp.action, "outcome", p.Outcome, "branch", p.Branch, "commit", p.Commit, "reason", p.Reason)
	return p, nil
}

func refuseAll(groups []group, reason string) []reverse.BranchResult {
	out := make([]reverse.BranchResult, 0, len(groups))
	for _, g := range groups {
		out = append(out, reverse.BranchResult{Action: g.action, Outcome: refluxv1.RefusedReason, Reason: reason, Records: g.records()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Action > out[j].Action })
	return out
}

func joinReasons(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
