package signing

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/git/signature"
	extgogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/internal/testkeys"
)

const email = "reflux@example.com"

func TestFromSecretErrors(t *testing.T) {
	pgpEnc, _ := testkeys.OpenPGP(t, "reflux", email, "s3cret")
	sshEnc, _ := testkeys.SSH(t, "s3cret")
	tests := []struct {
		name    string
		data    map[string][]byte
		wantErr error
	}{
		{name: "empty", data: nil, wantErr: ErrNoKey},
		{name: "both", data: map[string][]byte{KeyOpenPGP: pgpEnc, KeySSH: sshEnc}, wantErr: ErrAmbiguousKey},
		{name: "pgp garbage", data: map[string][]byte{KeyOpenPGP: []byte("nope")}, wantErr: ErrInvalidKey},
		{name: "ssh garbage", data: map[string][]byte{KeySSH: []byte("nope")}, wantErr: ErrInvalidKey},
		{name: "pgp no passphrase", data: map[string][]byte{KeyOpenPGP: pgpEnc}, wantErr: ErrPassphrase},
		{name: "pgp wrong passphrase", data: map[string][]byte{KeyOpenPGP: pgpEnc, KeyPassphrase: []byte("x")}, wantErr: ErrPassphrase},
		{name: "ssh no passphrase", data: map[string][]byte{KeySSH: sshEnc}, wantErr: ErrPassphrase},
		{name: "ssh wrong passphrase", data: map[string][]byte{KeySSH: sshEnc, KeyPassphrase: []byte("x")}, wantErr: ErrPassphrase},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := FromSecret(tt.data)
			g.Expect(err).To(MatchError(tt.wantErr))
		})
	}
}

// TestSignedCommitsVerify signs real commits and checks them with git's
// own verification and with fluxcd/pkg/git/signature.
func TestSignedCommitsVerify(t *testing.T) {
	for _, passphrase := range []string{"", "s3cret"} {
		t.Run("openpgp passphrase="+passphrase, func(t *testing.T) {
			g := NewWithT(t)
			priv, pub := testkeys.OpenPGP(t, "reflux", email, passphrase)
			s, err := FromSecret(map[string][]byte{KeyOpenPGP: priv, KeyPassphrase: []byte(passphrase)})
			g.Expect(err).ToNot(HaveOccurred())
			dir, c := signedCommit(t, s)

			out := testkeys.GitVerifyPGP(t, dir, c.Hash.String(), pub)
			g.Expect(out).To(ContainSubstring(`Good signature from "reflux (test) <reflux@example.com>"`))
			_, err = signature.VerifyPGPSignature(c.PGPSignature, payload(t, c), string(pub))
			g.Expect(err).ToNot(HaveOccurred())
		})
		t.Run("ssh passphrase="+passphrase, func(t *testing.T) {
			g := NewWithT(t)
			priv, pub := testkeys.SSH(t, passphrase)
			s, err := FromSecret(map[string][]byte{KeySSH: priv, KeyPassphrase: []byte(passphrase)})
			g.Expect(err).ToNot(HaveOccurred())
			dir, c := signedCommit(t, s)

			out := testkeys.GitVerifySSH(t, dir, c.Hash.String(), email, pub)
			g.Expect(out).To(ContainSubstring(`Good "git" signature for reflux@example.com`))
			_, err = signature.VerifySSHSignature(c.PGPSignature, payload(t, c), string(pub))
			g.Expect(err).ToNot(HaveOccurred())
		})
	}
}

func TestWrongKeyDoesNotVerify(t *testing.T) {
	g := NewWithT(t)
	priv, _ := testkeys.SSH(t, "")
	_, other := testkeys.SSH(t, "")
	s, err := NewSSH(priv, nil)
	g.Expect(err).ToNot(HaveOccurred())
	_, c := signedCommit(t, s)
	_, err = signature.VerifySSHSignature(c.PGPSignature, payload(t, c), string(other))
	g.Expect(err).To(HaveOccurred())
}

func signedCommit(t *testing.T, s Signer) (string, *object.Commit) {
	t.Helper()
	dir := t.TempDir()
	repo, err := extgogit.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add("a.yaml"); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit("signed\n", &extgogit.CommitOptions{
		Author: &object.Signature{Name: "reflux", Email: email, When: time.Now()},
		Signer: s,
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(h)
	if err != nil {
		t.Fatal(err)
	}
	return dir, c
}

func payload(t *testing.T, c *object.Commit) []byte {
	t.Helper()
	enc := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(enc); err != nil {
		t.Fatal(err)
	}
	r, err := enc.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
