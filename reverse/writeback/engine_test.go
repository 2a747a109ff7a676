package writeback

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/branch"
	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
	"github.com/reflux-dev/reflux/reverse/writeback/internal/testkeys"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
	"github.com/reflux-dev/reflux/reverse/writeback/signing"
)

// TestRunPushesSignedBranch covers HTTP basic auth with an OpenPGP key and
// SSH with an SSH signing key, each verified by git itself.
func TestRunPushesSignedBranch(t *testing.T) {
	tests := []struct {
		name   string
		start  func(testing.TB) *gitserver.Server
		signer func(t *testing.T) (signing.Signer, func(f *fixture, commit string) string)
	}{
		{name: "http+openpgp", start: gitserver.StartHTTP, signer: func(t *testing.T) (signing.Signer, func(*fixture, string) string) {
			priv, pub := testkeys.OpenPGP(t, "reflux", reflux.Email, "pass")
			s, err := signing.FromSecret(map[string][]byte{signing.KeyOpenPGP: priv, signing.KeyPassphrase: []byte("pass")})
			if err != nil {
				t.Fatal(err)
			}
			return s, func(f *fixture, commit string) string {
				return testkeys.GitVerifyPGP(t, f.srv.Root()+"/"+repoName, commit, pub)
			}
		}},
		{name: "ssh+sshsig", start: gitserver.StartSSH, signer: func(t *testing.T) (signing.Signer, func(*fixture, string) string) {
			priv, pub := testkeys.SSH(t, "")
			s, err := signing.FromSecret(map[string][]byte{signing.KeySSH: priv})
			if err != nil {
				t.Fatal(err)
			}
			return s, func(f *fixture, commit string) string {
				return testkeys.GitVerifySSH(t, f.srv.Root()+"/"+repoName, commit, reflux.Email, pub)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t, tt.start)
			signer, verify := tt.signer(t)
			req := f.request(fp1, setReplicas(5))
			req.Signer = signer
			main := f.srv.Head(t, repoName, "main")

			res := f.run(req)
			g.Expect(res.Outcome).To(Equal(BranchPushed))
			g.Expect(res.Branch).To(Equal("reflux/flux-system-apps/111111111111"))
			g.Expect(res.Base).To(Equal(main))
			g.Expect(f.srv.Head(t, repoName, res.Branch)).To(Equal(res.Commit))
			g.Expect(f.show(res.Commit, webFile)).To(Equal("replicas: 5\nimage: web:1.0\n"))
			g.Expect(f.gitOut("rev-parse", res.Commit+"^")).To(Equal(main))
			g.Expect(f.srv.Head(t, repoName, "main")).To(Equal(main), "the source branch is never written")

			out := verify(f, res.Commit)
			g.Expect(out).To(Or(ContainSubstring("Good signature"), ContainSubstring(`Good "git" signature`)))

			msg := f.gitOut("log", "-1", "--format=%B", res.Commit)
			g.Expect(msg).To(HavePrefix("reflux: write back live state of flux-system/apps\n"))
			g.Expect(msg).To(ContainSubstring("/spec/replicas: 2 -> 5 (origin apps/web/deploy.yaml:1;"))
			g.Expect(message.TrailerValue(msg, message.TrailerFingerprint)).To(Equal(fp1))
			g.Expect(message.TrailerValue(msg, message.TrailerKustomization)).To(Equal("flux-system/apps"))
			g.Expect(message.TrailerValue(msg, message.TrailerSourceRevision)).To(Equal("main@sha1:" + main))
		})
	}
}

func TestRunIsIdempotentAcrossRestarts(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	first := f.run(f.request(fp1, setReplicas(5)))
	g.Expect(first.Outcome).To(Equal(BranchPushed))

	again := f.run(f.request(fp1, setReplicas(5)))
	g.Expect(again.Outcome).To(Equal(UpToDate))
	g.Expect(again.Branch).To(Equal(first.Branch))
	g.Expect(again.Commit).To(Equal(first.Commit))

	// A restarted controller has no memory and maybe no cache either.
	f.eng = newEngine(t, t.TempDir())
	restarted := f.run(f.request(fp1, setReplicas(5)))
	g.Expect(restarted.Outcome).To(Equal(UpToDate))
	g.Expect(restarted.Commit).To(Equal(first.Commit))
	g.Expect(f.srv.Head(t, repoName, first.Branch)).To(Equal(first.Commit))
}

// TestRunRebuildsFromSource changes the drift set of reflux's open
// branch: the branch is rebuilt on the source head with only the newest
// values, and an unchanged set leaves it alone.
func TestRunRebuildsFromSource(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	main := f.srv.Head(t, repoName, "main")
	first := f.run(f.request(fp1, setReplicas(5)))

	// Same drift set, new live value.
	second := f.run(f.request(fp1, setReplicas(7)))
	g.Expect(second.Outcome).To(Equal(BranchPushed))
	g.Expect(second.Branch).To(Equal(first.Branch))
	g.Expect(second.Reason).To(ContainSubstring("rebuilt"))
	g.Expect(f.gitOut("rev-parse", second.Commit+"^")).To(Equal(main))
	g.Expect(f.show(second.Commit, webFile)).To(Equal("replicas: 7\nimage: web:1.0\n"))

	// Changed drift set: still reflux's open branch for this Kustomization.
	third := f.run(f.request(fp2, setReplicas(9)))
	g.Expect(third.Outcome).To(Equal(BranchPushed))
	g.Expect(third.Branch).To(Equal(first.Branch))
	g.Expect(third.Base).To(Equal(main))
	g.Expect(f.gitOut("rev-parse", third.Commit+"^")).To(Equal(main))
	g.Expect(f.gitOut("rev-list", "--count", "main.."+third.Commit)).To(Equal("1"), "one commit, not one per set")
	msg := f.gitOut("log", "-1", "--format=%B", third.Commit)
	g.Expect(message.TrailerValue(msg, message.TrailerFingerprint)).To(Equal(fp2))
	g.Expect(f.show(third.Commit, webFile)).To(Equal("replicas: 9\nimage: web:1.0\n"))

	// The same set again, also after a restart: no push, no churn.
	for _, eng := range []*Engine{f.eng, newEngine(t, t.TempDir())} {
		f.eng = eng
		again := f.run(f.request(fp2, setReplicas(9)))
		g.Expect(again.Outcome).To(Equal(UpToDate), again.Reason)
		g.Expect(again.Commit).To(Equal(third.Commit))
		g.Expect(f.srv.Head(t, repoName, first.Branch)).To(Equal(third.Commit))
	}
}

// TestRunDropsClosedEdit shrinks a drift set of two fields to one: the
// edit of the record that was closed leaves the branch.
func TestRunDropsClosedEdit(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	first := f.run(f.request(fp1, editWeb(5, "web:2.0")))
	g.Expect(f.show(first.Commit, webFile)).To(Equal("replicas: 5\nimage: web:2.0\n"))

	res := f.run(f.request(fp2, editWeb(0, "web:2.0")))
	g.Expect(res.Outcome).To(Equal(BranchPushed), res.Reason)
	g.Expect(res.Branch).To(Equal(first.Branch))
	g.Expect(f.show(res.Commit, webFile)).To(Equal("replicas: 2\nimage: web:2.0\n"), "the replicas edit is gone")
	g.Expect(f.gitOut("rev-parse", res.Commit+"^")).To(Equal(f.srv.Head(t, repoName, "main")))
}

// TestRunEmptyChange asks to take everything out of the kind's branch.
func TestRunEmptyChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, gitserver.StartHTTP)
	main := f.srv.Head(t, repoName, "main")

	// No branch: nothing to take out, and none is created.
	res := f.run(f.request(fpNone, noChange))
	g.Expect(res.Outcome).To(Equal(UpToDate))
	g.Expect(res.Branch).To(BeEmpty())
	g.Expect(f.gitOut("branch", "--list", "reflux/*")).To(BeEmpty())

	// A branch only reflux wrote proposes nothing any more: left for the
	// caller to close and delete, leased on its head.
	first := f.run(f.request(fp1, setReplicas(5)))
	res = f.run(f.request(fpNone, noChange))
	g.Expect(res.Outcome).To(Equal(Obsolete), res.Reason)
	g.Expect(res.Branch).To(Equal(first.Branch))
	g.Expect(res.Commit).To(Equal(first.Commit))
	g.Expect(res.Base).To(Equal(main))
	g.Expect(res.Reason).To(ContainSubstring("proposes nothing"))
	g.Expect(f.srv.Head(t, repoName, first.Branch)).To(Equal(first.Commit), "nothing pushed or deleted")

	req := f.request(fpNone, noChange)
	g.Expect(f.eng.DeleteClosed(ctx, Repo{URL: req.RepoURL, Auth: req.Auth}, "reflux/", "main", res.Branch, res.Commit)).To(Succeed())
	g.Expect(f.srv.Head(t, repoName, first.Branch)).To(BeEmpty())
}

// TestRunSuperseded stops a run whose drift set changed while it was
// written: nothing is pushed, and only ErrSuperseded says so.
func TestRunSuperseded(t *testing.T) {
	superseded := func(context.Context, string) error { return fmt.Errorf("set 2 arrived: %w", ErrSuperseded) }
	failing := func(context.Context, string) error { return errorString("status write failed") }
	tests := []struct {
		name        string
		open        bool
		beforePush  func(context.Context, string) error
		wantOutcome Outcome
		wantErr     error
		notErr      error
	}{
		{name: "new branch", beforePush: superseded, wantOutcome: Superseded, wantErr: ErrSuperseded, notErr: ErrGit},
		{name: "rebuild", open: true, beforePush: superseded, wantOutcome: Superseded, wantErr: ErrSuperseded, notErr: ErrGit},
		{name: "other failure", beforePush: failing, wantOutcome: GitError, wantErr: ErrGit, notErr: ErrSuperseded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t, gitserver.StartHTTP)
			var before Result
			if tt.open {
				before = f.run(f.request(fp1, setReplicas(5)))
			}
			req := f.request(fp1, setReplicas(7))
			req.BeforePush = tt.beforePush
			res, err := f.eng.Run(context.Background(), req)
			g.Expect(err).To(MatchError(tt.wantErr))
			g.Expect(errors.Is(err, tt.notErr)).To(BeFalse(), "%v", err)
			g.Expect(res.Outcome).To(Equal(tt.wantOutcome))
			if tt.open {
				g.Expect(f.srv.Head(t, repoName, before.Branch)).To(Equal(before.Commit), "nothing pushed")
			} else {
				g.Expect(f.gitOut("branch", "--list", "reflux/*")).To(BeEmpty(), "nothing pushed")
			}
		})
	}
}

func TestRunAlertBranchNeedsDecision(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	merge := f.run(f.request(fp1, setReplicas(5)))
	req := f.request(fp1, setReplicas(6))
	req.Kind = KindAlert
	alert := f.run(req)

	g.Expect(alert.Outcome).To(Equal(BranchPushed))
	g.Expect(alert.Branch).To(Equal("reflux/flux-system-apps/needs-decision-111111111111"))
	g.Expect(alert.Branch).ToNot(Equal(merge.Branch))
	msg := f.gitOut("log", "-1", "--format=%B", alert.Commit)
	g.Expect(msg).To(HavePrefix("reflux: needs decision:"))
	g.Expect(message.TrailerValue(msg, message.TrailerNeedsDecision)).To(Equal("true"))
	g.Expect(message.TrailerValue(msg, message.TrailerKind)).To(Equal("alert"))
	g.Expect(f.gitOut("rev-parse", alert.Commit+"^")).To(Equal(f.srv.Head(t, repoName, "main")))
}

func TestRunNothingToWriteBack(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	res := f.run(f.request(fp1, setReplicas(2)))
	g.Expect(res.Outcome).To(Equal(UpToDate))
	g.Expect(res.Branch).To(BeEmpty())
	g.Expect(f.gitOut("branch", "--list", "reflux/*")).To(BeEmpty())
}

func TestRunRefusesBadRequests(t *testing.T) {
	f := newFixture(t, gitserver.StartHTTP)
	tests := []struct {
		name    string
		mutate  func(*Request)
		wantErr error
	}{
		{name: "missing author", mutate: func(r *Request) { r.Author = Author{} }, wantErr: ErrInvalidRequest},
		{name: "fingerprint with newline", mutate: func(r *Request) { r.Fingerprint = "a\nb" }, wantErr: ErrInvalidRequest},
		{name: "unknown kind", mutate: func(r *Request) { r.Kind = "maybe" }, wantErr: ErrInvalidRequest},
		{name: "source under prefix", mutate: func(r *Request) { r.SourceBranch = "reflux/main" }, wantErr: branch.ErrSourceBranch},
		{name: "bad prefix", mutate: func(r *Request) { r.BranchPrefix = "reflux" }, wantErr: branch.ErrInvalidPrefix},
		{name: "missing source", mutate: func(r *Request) { r.SourceBranch = "nope" }, wantErr: ErrSourceNotFound},
		{name: "path escapes worktree", mutate: func(r *Request) {
			r.Apply = func(string) ([]string, error) { return []string{"../../etc/passwd"}, nil }
		}, wantErr: ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			req := f.request(fp1, setReplicas(5))
			tt.mutate(&req)
			res, err := f.eng.Run(context.Background(), req)
			g.Expect(err).To(MatchError(tt.wantErr))
			g.Expect(res.Outcome).To(Equal(Refused))
		})
	}
	NewWithT(t).Expect(f.gitOut("branch", "--list", "reflux/*")).To(BeEmpty())
}

func TestRunApplyConflict(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	res := f.run(f.request(fp1, func(string) ([]string, error) {
		return nil, errFieldChanged
	}))
	g.Expect(res.Outcome).To(Equal(Conflict))
	g.Expect(res.Reason).To(ContainSubstring("field changed"))
	g.Expect(f.gitOut("branch", "--list", "reflux/*")).To(BeEmpty())
}

var errFieldChanged = errorString("field changed in git")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestApplyCalledOncePerAttempt(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	var calls atomic.Int32
	f.run(f.request(fp1, guardedReplicas(2, 5, &calls, nil)))
	g.Expect(calls.Load()).To(BeEquivalentTo(1))
	g.Expect(strings.Count(f.gitOut("log", "--format=%H", "reflux/flux-system-apps/111111111111"), "\n")).To(Equal(1))
}

func TestNewValidatesOptions(t *testing.T) {
	g := NewWithT(t)
	_, err := New("")
	g.Expect(err).To(HaveOccurred())
	_, err = New(t.TempDir(), WithMaxAttempts(0))
	g.Expect(err).To(HaveOccurred())
	_, err = New(t.TempDir(), WithMessageTemplate("{{"))
	g.Expect(err).To(MatchError(message.ErrTemplate))
	_, err = New(t.TempDir(), WithOpener(nil))
	g.Expect(err).To(HaveOccurred())
}

func TestCustomMessageTemplate(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP, WithMessageTemplate("fix({{.Kustomization}}): {{len .Fields}} field(s)"))
	res := f.run(f.request(fp1, setReplicas(5)))
	msg := f.gitOut("log", "-1", "--format=%B", res.Commit)
	g.Expect(msg).To(HavePrefix("fix(flux-system/apps): 1 field(s)\n\nReflux-Fingerprint: " + fp1))
}
