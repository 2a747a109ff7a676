package journey

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
)

// gitURL is a repository's URL with credentials, for the git CLI playing
// the reviewer.
func gitURL(repo string) string {
	u, err := url.Parse(env.Git.HTTPURL(repo))
	if err != nil {
		panic(err)
	}
	u.User = url.UserPassword(env.Git.Username, env.Git.Password)
	return u.String()
}

// gitCLI runs the real git in dir and returns its trimmed output.
func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := runIn(dir, nil, "git", args...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(out)
}

func runIn(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// branches lists the repository's heads under reflux/, as ls-remote sees
// them.
func branches(t *testing.T, repo string) []string {
	var out []string
	for line := range strings.Lines(gitCLI(t, "", "ls-remote", "--heads", gitURL(repo))) {
		if _, ref, ok := strings.Cut(strings.TrimSpace(line), "\trefs/heads/"); ok && strings.HasPrefix(ref, "reflux/") {
			out = append(out, ref)
		}
	}
	return out
}

// cloneBranch clones one branch of repo into a temporary directory with the
// git CLI.
func cloneBranch(t *testing.T, repo, branch string) string {
	dir := t.TempDir()
	gitCLI(t, "", "clone", "-q", "-b", branch, gitURL(repo), dir)
	return dir
}

// verifySigned checks HEAD's signature twice: with the real git and gpg in
// a throwaway keyring holding only public, and with go-git's OpenPGP
// verification, which must name the signer.
func verifySigned(t *testing.T, dir string, public []byte) {
	t.Helper()
	home := t.TempDir()
	key := filepath.Join(home, "reflux.asc")
	if err := os.WriteFile(key, public, 0o600); err != nil {
		t.Fatal(err)
	}
	gnupg := []string{"GNUPGHOME=" + home}
	if out, err := runIn(dir, gnupg, "gpg", "--batch", "--import", key); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	out, err := runIn(dir, gnupg, "git", "verify-commit", "-v", "HEAD")
	if err != nil || !strings.Contains(out, "Good signature") {
		t.Fatalf("git verify-commit HEAD: %v\n%s", err, out)
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := commit.Verify(string(public))
	if err != nil {
		t.Fatalf("go-git verifying %s: %v", head.Hash(), err)
	}
	if _, ok := signer.Identities["reflux (e2e) <reflux@example.com>"]; !ok {
		t.Fatalf("commit %s signed by %v", head.Hash(), signer.Identities)
	}
}

// diffLines parses `git diff -U0` output into the hunk headers and the
// added and removed lines.
func diffLines(diff string) (hunks, added, removed []string) {
	for line := range strings.Lines(diff) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "@@"):
			hunks = append(hunks, line)
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
		case strings.HasPrefix(line, "+"):
			added = append(added, line[1:])
		case strings.HasPrefix(line, "-"):
			removed = append(removed, line[1:])
		}
	}
	return hunks, added, removed
}
