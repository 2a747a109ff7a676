package testkeys

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"golang.org/x/crypto/ssh"
)

// OpenPGP returns a new armored private key ring, encrypted when passphrase
// is set, and its armored public key.
func OpenPGP(t testing.TB, name, email, passphrase string) (private, public []byte) {
	t.Helper()
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	e, err := openpgp.NewEntity(name, "test", email, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	w, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	if passphrase != "" {
		if err := e.EncryptPrivateKeys([]byte(passphrase), cfg); err != nil {
			t.Fatal(err)
		}
	}
	var priv bytes.Buffer
	w, err = armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivateWithoutSigning(w, cfg); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	return priv.Bytes(), pub.Bytes()
}

// SSH returns a new ed25519 private key in OpenSSH form, encrypted when
// passphrase is set, and its authorized_keys line.
func SSH(t testing.TB, passphrase string) (private, authorized []byte) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "reflux-test")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "reflux-test", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), ssh.MarshalAuthorizedKey(sshPub)
}
