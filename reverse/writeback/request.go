package writeback

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/reflux-dev/reflux/reverse/writeback/branch"
	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
	"github.com/reflux-dev/reflux/reverse/writeback/signing"
)

// Kind says what reflux may do with a change.
type Kind string

const (
	// KindMerge is a change reflux proposes for merging.
	KindMerge Kind = "merge"
	// KindAlert is a change that needs a human decision; its branch is
	// labelled needs-decision and reflux never merges it.
	KindAlert Kind = "alert"
)

// Kustomization identifies the Flux Kustomization whose drift is written
// back.
type Kustomization struct {
	Namespace string
	Name      string
}

// String returns "namespace/name".
func (k Kustomization) String() string {
	return k.Namespace + "/" + k.Name
}

// Author is the identity reflux commits as. Commits are only ever treated
// as reflux's own when their committer email matches it.
type Author struct {
	Name  string
	Email string
}

// ApplyFunc edits files in the worktree to bring Git in line with the live
// state, and returns the worktree-relative paths it changed (a deleted file
// counts). It writes the whole open drift set of the request's
// Kustomization and kind, never a difference to an earlier set, and always
// runs on a source commit: the source head, or, on a branch a human has
// committed to, the branch's merge base with the source. It never runs on
// top of reflux's own commits, which is how the edits of closed records
// leave a branch. It must be idempotent, and may run again after the
// source branch moved. Returning no paths is legal: it asks for a branch
// that proposes nothing but the humans' own commits (see Request). An
// error means the edit cannot be made on this base (e.g. the field changed
// in Git) and yields Conflict.
type ApplyFunc func(worktreeDir string) (changed []string, err error)

// Request describes one write-back.
type Request struct {
	// RepoURL is the source repository URL (https:// or ssh://).
	RepoURL string
	// Auth authenticates against RepoURL; build it with git.NewAuth from
	// the GitRepository Secret. Nil means anonymous.
	Auth *git.AuthOptions
	// SourceBranch is the branch Flux applies from; never written to.
	SourceBranch string
	// BranchPrefix fences reflux's branches; defaults to "reflux/".
	BranchPrefix string
	// Kustomization whose drift this is.
	Kustomization Kustomization
	// Fingerprint identifies the drift set. It names new branches and is
	// recorded in the Reflux-Fingerprint trailer.
	Fingerprint string
	// Kind is KindMerge or KindAlert.
	Kind Kind
	// Author is the identity of reflux's commits.
	Author Author
	// Signer signs commits; nil leaves them unsigned.
	Signer signing.Signer
	// Fields are the drifted values, rendered into the commit message.
	Fields []message.Field
	// Apply edits the worktree. An Apply that changes nothing, with
	// Fingerprint "none", is how the caller takes everything out of the
	// kind's open branch: a branch only reflux wrote comes back Obsolete,
	// and one a human committed to gets a commit that keeps only the
	// human's work.
	Apply ApplyFunc
	// BeforePush, when set, is called with the branch right before each
	// push: the caller records its write intent there, so that a branch
	// deleted right after the push is known to have been pushed. An error
	// stops the run before anything is pushed; one wrapping ErrSuperseded
	// makes the outcome Superseded.
	BeforePush func(ctx context.Context, branch string) error
	// MessageTemplate overrides the engine's commit message template for
	// this request (a policy's spec.git.commitMessageTemplate).
	MessageTemplate string
}

var fingerprintRE = regexp.MustCompile(`^[A-Za-z0-9._:+/=-]{1,200}$`)

func (r Request) withDefaults() Request {
	if r.BranchPrefix == "" {
		r.BranchPrefix = branch.DefaultPrefix
	}
	if r.Kind == "" {
		r.Kind = KindMerge
	}
	return r
}

func (r Request) validate() error {
	var missing []string
	for field, v := range map[string]string{
		"RepoURL": r.RepoURL, "SourceBranch": r.SourceBranch, "Kustomization.Namespace": r.Kustomization.Namespace,
		"Kustomization.Name": r.Kustomization.Name, "Author.Name": r.Author.Name, "Author.Email": r.Author.Email,
	} {
		if v == "" {
			missing = append(missing, field)
		}
	}
	if r.Apply == nil {
		missing = append(missing, "Apply")
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%w: missing %s", ErrInvalidRequest, strings.Join(missing, ", "))
	}
	if !fingerprintRE.MatchString(r.Fingerprint) {
		return fmt.Errorf("%w: fingerprint %q must match %s", ErrInvalidRequest, r.Fingerprint, fingerprintRE)
	}
	if r.Kind != KindMerge && r.Kind != KindAlert {
		return fmt.Errorf("%w: unknown kind %q", ErrInvalidRequest, r.Kind)
	}
	if err := branch.Validate(r.SourceBranch); err != nil {
		return fmt.Errorf("%w: source branch: %w", ErrInvalidRequest, err)
	}
	if strings.HasPrefix(r.SourceBranch, r.BranchPrefix) {
		return fmt.Errorf("%w: source branch %q lies under the reflux prefix %q", branch.ErrSourceBranch, r.SourceBranch, r.BranchPrefix)
	}
	return nil
}

func (r Request) spec() branch.Spec {
	return branch.Spec{
		Prefix:        r.BranchPrefix,
		Namespace:     r.Kustomization.Namespace,
		Name:          r.Kustomization.Name,
		Fingerprint:   r.Fingerprint,
		NeedsDecision: r.Kind == KindAlert,
	}
}
