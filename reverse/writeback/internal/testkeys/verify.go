package testkeys

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GitVerifyPGP runs `git verify-commit` and `git log --show-signature` on
// commit in repoDir with a throwaway GNUPGHOME holding only publicKey, and
// returns their combined output. It fails the test when git rejects the
// signature.
func GitVerifyPGP(t testing.TB, repoDir, commit string, publicKey []byte) string {
	t.Helper()
	// gpg-agent sockets live in GNUPGHOME and must fit in sun_path, so keep
	// the path short rather than using t.TempDir().
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		kill := exec.Command("gpgconf", "--kill", "all")
		kill.Env = append(os.Environ(), "GNUPGHOME="+home)
		_ = kill.Run()
		_ = os.RemoveAll(home)
	})
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"GNUPGHOME=" + home}
	run(t, "", env, publicKey, "gpg", "--batch", "--import")
	out := run(t, repoDir, env, nil, "git", "verify-commit", "-v", commit)
	out += run(t, repoDir, env, nil, "git", "log", "-1", "--show-signature", commit)
	return out
}

// GitVerifySSH runs `git verify-commit` and `git log --show-signature` with
// gpg.format=ssh and an allowed-signers file trusting authorizedKey for
// email.
func GitVerifySSH(t testing.TB, repoDir, commit, email string, authorizedKey []byte) string {
	t.Helper()
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	line := email + ` namespaces="git" ` + strings.TrimSpace(string(authorizedKey)) + "\n"
	if err := os.WriteFile(allowed, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := []string{"-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile=" + allowed}
	out := run(t, repoDir, nil, nil, "git", append(cfg, "verify-commit", "-v", commit)...)
	out += run(t, repoDir, nil, nil, "git", append(cfg, "log", "-1", "--show-signature", commit)...)
	return out
}

func run(t testing.TB, dir string, env []string, stdin []byte, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}
