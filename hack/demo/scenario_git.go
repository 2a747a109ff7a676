package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// showProposal waits for both records to be Proposed with a pull request
// in Gitea, then reviews the flag's branch as a person would, with the git
// CLI: the commit, its diff against main, and its signature checked
// against the demo's public key, and by Gitea. It ends with the conditions
// reflux set on the Kustomization.
func (d *demo) showProposal(ctx context.Context) error {
	err := d.waitFor(ctx, proposalTimeout, "waiting for the proposal branches and pull requests", func(ctx context.Context) error {
		flag, err := d.proposedRecord(ctx, "ConfigMap", flagsName)
		if err != nil {
			return err
		}
		replicas, err := d.proposedRecord(ctx, "Deployment", appName)
		if err != nil {
			return err
		}
		d.scenario.flagRecord, d.scenario.replicasRecord = flag, replicas
		return nil
	})
	if err != nil {
		return err
	}
	p := &printer{w: d.opts.out}
	for _, rec := range []*refluxv1.Drift{d.scenario.flagRecord, d.scenario.replicasRecord} {
		p.line("    drift/%s (%s) is %s", rec.Name, rec.Status.Action, rec.Status.State)
		p.line("      branch %s  pull request %s", rec.Status.Branch, rec.Status.PullRequest)
		p.line("      commit %s", rec.Status.Commit)
	}
	p.line("")
	p.line("    A reviewer's look at the %s branch:", d.scenario.flagRecord.Status.Action)
	if err := d.review(ctx, d.scenario.flagRecord); err != nil {
		return err
	}
	return d.printConditions(ctx, d.scenario.flagRecord.Status.Branch)
}

// proposedRecord returns the object's record once it is Proposed with a
// branch, commit and pull request. While it is not, the error names the record's state
// and the Kustomization's ReverseSynced condition, which says why a push
// failed or was refused.
func (d *demo) proposedRecord(ctx context.Context, kind, name string) (*refluxv1.Drift, error) {
	rec, err := d.record(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	if rec.Status.State == refluxv1.DriftProposed && rec.Status.Branch != "" && rec.Status.Commit != "" && rec.Status.PullRequest != "" {
		return rec, nil
	}
	return nil, fmt.Errorf("drift/%s is %s, Kustomization has %s", rec.Name, stateOf(rec),
		conditionString(d.kustomizationCondition(ctx, refluxv1.ReverseSyncedCondition), refluxv1.ReverseSyncedCondition))
}

// review clones the proposed branch with the git CLI and prints the
// commit, its diff against main and gpg's verdict on its signature.
func (d *demo) review(ctx context.Context, rec *refluxv1.Drift) error {
	dir, err := os.MkdirTemp(d.env.Dir, "review-")
	if err != nil {
		return fmt.Errorf("creating a directory for the clone: %w", err)
	}
	d.scenario.checkout = dir
	if _, err := runGit(ctx, "", nil, "clone", "-q", "-b", rec.Status.Branch, d.httpCloneURL(), dir); err != nil {
		return err
	}
	head, err := runGit(ctx, dir, nil, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	p := &printer{w: d.opts.out}
	if head = strings.TrimSpace(head); head != rec.Status.Commit {
		p.line("    note: the branch has moved on since the record: its head is %s", head)
	}
	for _, args := range [][]string{{"show", "--stat", "HEAD"}, {"diff", "origin/main", "HEAD"}} {
		out, err := runGit(ctx, dir, nil, args...)
		if err != nil {
			return err
		}
		p.line("")
		p.line("    $ git %s", strings.Join(args, " "))
		printIndented(p, out)
	}
	return d.verify(ctx, dir)
}

// verify checks the branch head's signature with the real git and gpg,
// in a throwaway keyring that trusts only the demo's public key, and
// keeps gpg's verdict.
func (d *demo) verify(ctx context.Context, dir string) (err error) {
	home, err := os.MkdirTemp(d.env.Dir, "gnupg-")
	if err != nil {
		return fmt.Errorf("creating a GNUPGHOME: %w", err)
	}
	env := []string{"GNUPGHOME=" + home}
	// gpg may start an agent for the keyring; the demo leaves nothing
	// running, and the directory goes with the environment.
	defer func() { _, _ = runCmd(ctx, "", env, nil, "gpgconf", "--kill", "all") }()
	if _, err := runCmd(ctx, "", env, nil, "gpg", "--batch", "--import", d.keys.signingPub); err != nil {
		return err
	}
	if err := trustImportedKey(ctx, env); err != nil {
		return err
	}
	out, err := runGit(ctx, dir, env, "verify-commit", "HEAD")
	p := &printer{w: d.opts.out}
	p.line("")
	p.line("    $ gpg --import %s   # in an empty GNUPGHOME, trusting that key only", d.keys.signingPub)
	p.line("    $ git verify-commit HEAD")
	printIndented(p, out)
	if err != nil {
		return fmt.Errorf("the branch head's signature does not verify: %w", err)
	}
	d.scenario.signature = out
	return d.giteaVerdict(ctx, strings.TrimSpace(headOf(ctx, dir)))
}

// headOf is the checkout's HEAD commit, or "" when git cannot say.
func headOf(ctx context.Context, dir string) string {
	out, _ := runGit(ctx, dir, nil, "rev-parse", "HEAD") // verify-commit just read HEAD
	return out
}

// giteaVerdict prints what Gitea says of the commit's signature, which
// reviewers see beside the commit in the pull request.
func (d *demo) giteaVerdict(ctx context.Context, sha string) error {
	var c struct {
		Commit struct {
			Verification struct {
				Verified bool   `json:"verified"`
				Reason   string `json:"reason"`
			} `json:"verification"`
		} `json:"commit"`
	}
	if err := d.gitea.API(ctx, http.MethodGet, "/repos/"+d.gitea.Username+"/"+repoName+"/git/commits/"+sha, nil, &c); err != nil {
		return fmt.Errorf("asking Gitea about commit %s: %w", sha, err)
	}
	v := c.Commit.Verification
	p := &printer{w: d.opts.out}
	p.line("")
	p.line("    Gitea: verified=%t (%s)", v.Verified, v.Reason)
	if !v.Verified {
		return fmt.Errorf("gitea does not show commit %s as verified: %s", sha, v.Reason)
	}
	d.scenario.giteaVerified = true
	return nil
}

// trustImportedKey marks the keyring's only key as ultimately trusted, so
// gpg's verdict is about the signature rather than the web of trust.
func trustImportedKey(ctx context.Context, env []string) error {
	out, err := runCmd(ctx, "", env, nil, "gpg", "--batch", "--with-colons", "--fingerprint")
	if err != nil {
		return err
	}
	var fpr string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Split(l, ":"); len(f) > 9 && f[0] == "fpr" {
			fpr = f[9]
			break
		}
	}
	if fpr == "" {
		return errors.New("gpg listed no fingerprint for the imported public key")
	}
	if _, err := runCmd(ctx, "", env, strings.NewReader(fpr+":6:\n"), "gpg", "--batch", "--import-ownertrust"); err != nil {
		return err
	}
	// Rebuilding the trust database now keeps its report out of the
	// verdict printed below.
	_, err = runCmd(ctx, "", env, nil, "gpg", "--batch", "--check-trustdb")
	return err
}

// printConditions waits until the Kustomization's ReverseSynced condition
// names the branch, then prints it with Drifted.
func (d *demo) printConditions(ctx context.Context, branch string) error {
	var drifted, synced *metav1.Condition
	err := d.waitFor(ctx, recordTimeout, "waiting for the Kustomization's conditions", func(ctx context.Context) error {
		drifted = d.kustomizationCondition(ctx, refluxv1.DriftedCondition)
		synced = d.kustomizationCondition(ctx, refluxv1.ReverseSyncedCondition)
		switch {
		case drifted == nil:
			return errors.New("no Drifted condition")
		case synced == nil || !strings.Contains(synced.Message, branch):
			return fmt.Errorf("%s does not name %s", conditionString(synced, refluxv1.ReverseSyncedCondition), branch)
		}
		return nil
	})
	if err != nil {
		return err
	}
	p := &printer{w: d.opts.out}
	p.line("")
	p.line("    Kustomization %s/%s", fluxNamespace, appName)
	p.line("      %s", conditionString(drifted, refluxv1.DriftedCondition))
	p.line("      %s", conditionString(synced, refluxv1.ReverseSyncedCondition))
	return nil
}

// kustomizationCondition reads one condition of the demo Kustomization;
// nil when it is absent or cannot be read.
func (d *demo) kustomizationCondition(ctx context.Context, condType string) *metav1.Condition {
	ks := d.kustomization.DeepCopy()
	if err := d.env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
		return nil
	}
	return apimeta.FindStatusCondition(ks.Status.Conditions, condType)
}

func conditionString(c *metav1.Condition, condType string) string {
	if c == nil {
		return "no " + condType + " condition"
	}
	return fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
}

// printIndented prints a command's output under the step.
func printIndented(p *printer, out string) {
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		p.line("      %s", l)
	}
}

// runGit runs the git CLI without the user's or the system's git config,
// so a signing or URL setting there cannot change what the demo shows.
func runGit(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	env = append([]string{"GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}, env...)
	return runCmd(ctx, dir, env, nil, "git", args...)
}

// runCmd runs name with the demo's environment plus env and returns its
// combined output; an error carries that output's gist.
func runCmd(ctx context.Context, dir string, env []string, stdin *strings.Reader, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, oneLineString(out.String()))
	}
	return out.String(), nil
}

func oneLineString(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
