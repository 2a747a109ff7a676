package policy

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func armoredKey(t *testing.T, passphrase []byte) []byte {
	t.Helper()
	e, err := openpgp.NewEntity("reflux", "test", "reflux@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	if passphrase != nil {
		if err := e.EncryptPrivateKeys(passphrase, nil); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Encrypted keys must not be re-signed, so serialise without signing.
	if passphrase != nil {
		err = e.SerializePrivateWithoutSigning(w, nil)
	} else {
		err = e.SerializePrivate(w, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

func sshKey(t *testing.T) []byte {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block)
}

func TestCheckSigningKey(t *testing.T) {
	plain := armoredKey(t, nil)
	locked := armoredKey(t, []byte("s3cret"))
	tests := []struct {
		name    string
		typ     refluxv1.SigningKeyType
		data    map[string][]byte
		wantErr string
	}{
		{name: "openpgp key", typ: refluxv1.OpenPGPSigningKey, data: map[string][]byte{"git.asc": plain}},
		{name: "openpgp with passphrase", typ: refluxv1.OpenPGPSigningKey,
			data: map[string][]byte{"git.asc": locked, "passphrase": []byte("s3cret")}},
		{name: "openpgp wrong passphrase", typ: refluxv1.OpenPGPSigningKey,
			data: map[string][]byte{"git.asc": locked, "passphrase": []byte("nope")}, wantErr: "passphrase missing or wrong"},
		{name: "openpgp encrypted without passphrase", typ: refluxv1.OpenPGPSigningKey,
			data: map[string][]byte{"git.asc": locked}, wantErr: "passphrase missing or wrong: the OpenPGP key is encrypted"},
		{name: "openpgp missing", typ: refluxv1.OpenPGPSigningKey, data: map[string][]byte{}, wantErr: "git.asc: missing"},
		{name: "openpgp garbage", typ: refluxv1.OpenPGPSigningKey,
			data: map[string][]byte{"git.asc": []byte("hello")}, wantErr: "git.asc: not a usable openpgp signing key"},
		{name: "ssh key", typ: refluxv1.SSHSigningKey, data: map[string][]byte{"git.ssh": sshKey(t)}},
		{name: "ssh missing", typ: refluxv1.SSHSigningKey, data: map[string][]byte{"git.asc": plain}, wantErr: "git.ssh: missing"},
		{name: "ssh garbage", typ: refluxv1.SSHSigningKey,
			data: map[string][]byte{"git.ssh": []byte("-----BEGIN NOPE-----")}, wantErr: "git.ssh: not a usable ssh signing key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckSigningKey(tt.typ, tt.data)
			if tt.wantErr == "" {
				g.Expect(err).ToNot(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ErrInvalid))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
		})
	}
}
