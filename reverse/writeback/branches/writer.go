package branches

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/branch"
	"github.com/reflux-dev/reflux/reverse/writeback/forge"
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
// reviewers do with them. A branch always proposes exactly the open
// records on it: the engine rebuilds it from its base on every change, and
// a branch with nothing open left is closed (issue 17).
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
	// Values renders a HelmRelease's chart with a values change, to
	// verify what a branch proposes for a field the chart rendered; nil
	// refuses every such field.
	Values ValuesVerifier
}

// ValuesVerifier proves a values change of a HelmRelease through its
// chart: with set, the chart renders want and nothing else differs. A
// decision (the change does not render as asked) wraps
// chart.ErrUnverified, chart.ErrRender or chart.ErrValues; any other
// error is retried.
type ValuesVerifier interface {
	VerifyValues(ctx context.Context, hr types.NamespacedName, set []chart.Setting, want []chart.Wanted) error
}

// Write writes the set's Merge fields and Alert fields to their
// branches, and retires a kind's branch when none of its fields is left
// open. A GitError is returned as an error too, so the caller backs off
// and retries; every other outcome is a decision reported in the results.
// Before each push, set.Intent records where the push goes; before a
// branch is closed, set.Withdraw takes its records off it.
func (h *Writer) Write(ctx context.Context, set reverse.DriftSet) ([]reverse.BranchResult, error) {
	if set.Policy == nil {
		return nil, errors.New("drift set has no policy")
	}
	gitSpec := set.Policy.Spec.Git
	if gitSpec.ReportOnly {
		return []reverse.BranchResult{{Outcome: refluxv1.ReportOnlyReason, Reason: "policy is report-only: nothing is written to Git"}}, nil
	}
	groups := split(set.Records, gitSpec.AlertBranches != "None", writesOf(gitSpec))
	if set.Source == nil || set.Source.Branch == "" {
		return refuseAll(groups, "the Kustomization's source is not a GitRepository with a branch reflux can write beside"), nil
	}
	s, err := h.session(set)
	if err != nil {
		return refuseAll(groups, err.Error()), nil
	}
	var results []reverse.BranchResult
	var errs []error
	for _, grp := range groups {
		res, err := s.writeKind(ctx, grp)
		results = append(results, res...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return results, errors.Join(errs...)
}

// session is one write-back of a set: its credentials, signer and forge.
type session struct {
	h      *Writer
	set    reverse.DriftSet
	auth   *git.AuthOptions
	signer signing.Signer
	// fg and fgErr are the forge, connected on first use.
	fg        Forge
	fgErr     error
	connected bool
}

func (h *Writer) session(set reverse.DriftSet) (*session, error) {
	auth, err := git.NewAuth(set.Source.URL, set.Source.AuthData)
	if err != nil {
		return nil, fmt.Errorf("GitRepository credentials: %w", err)
	}
	s := &session{h: h, set: set, auth: auth}
	if set.SigningKey != nil {
		if s.signer, err = signing.FromSecret(set.SigningKey); err != nil {
			return nil, fmt.Errorf("signing key: %w", err)
		}
	}
	return s, nil
}

// forge returns the policy's forge, or nil when it opens no pull requests.
func (s *session) forge(ctx context.Context) (Forge, error) {
	if !s.connected {
		s.fg, s.fgErr = s.h.connect(ctx, s.set)
		s.connected = true
	}
	return s.fg, s.fgErr
}

func (s *session) repo() writeback.Repo {
	return writeback.Repo{URL: s.set.Source.URL, Auth: s.auth}
}

// writeKind writes one kind's branch: its fields, or, when none is left
// open and writable, the retirement of the branch that carried them.
func (s *session) writeKind(ctx context.Context, grp group) ([]reverse.BranchResult, error) {
	var out []reverse.BranchResult
	if len(grp.fields) == 0 {
		if len(grp.refused) > 0 {
			out = append(out, reverse.BranchResult{Action: grp.action, Outcome: refluxv1.RefusedReason, Reason: grp.refusals(),
				Records: grp.records(), NotWritten: grp.notWritten()})
		}
		if !s.named(grp.action) {
			// No record was ever put on a branch of this kind: there is
			// nothing to retire, and no fetch is spent finding that out.
			// A branch no record names is the branch check's (Check).
			return out, nil
		}
		res, err := s.retire(ctx, grp.action, fingerprintNone, "no open drift is left on it")
		if res.Outcome != "" {
			out = append(out, res)
		}
		return out, err
	}
	p, err := s.write(ctx, grp)
	return append(out, p), err
}

// named reports whether a record of the set, open or closed, names a
// branch of the kind of action.
func (s *session) named(action refluxv1.Action) bool {
	for _, list := range [][]refluxv1.Drift{s.set.Records, s.set.Closed} {
		for _, r := range list {
			if r.Status.Branch == "" {
				continue
			}
			info, err := branch.Parse(prefixOf(s.set), r.Status.Branch)
			if err == nil && info.NeedsDecision == (action == refluxv1.AlertAction) {
				return true
			}
		}
	}
	return false
}

func refuseAll(groups []group, reason string) []reverse.BranchResult {
	out := make([]reverse.BranchResult, 0, len(groups))
	for _, g := range groups {
		if len(g.fields)+len(g.refused) == 0 {
			continue
		}
		notWritten := map[string]string{}
		for _, n := range g.records() {
			notWritten[n] = reason
		}
		out = append(out, reverse.BranchResult{Action: g.action, Outcome: refluxv1.RefusedReason, Reason: reason, Records: g.records(),
			NotWritten: notWritten})
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
