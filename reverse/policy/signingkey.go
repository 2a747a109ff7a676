package policy

import (
	"bytes"
	"fmt"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// Keys of the signing Secret. They follow Flux's image-automation-controller
// for OpenPGP and Flux's GitRepository Secret format for SSH, so a platform
// team can reuse the Secrets it already has.
const (
	// OpenPGPKeyField holds an armored OpenPGP private key.
	OpenPGPKeyField = "git.asc"
	// PassphraseField optionally decrypts the private key.
	PassphraseField = "passphrase"
	// SSHKeyField holds a PEM or OpenSSH private key (the same key
	// reverse/writeback/signing reads).
	SSHKeyField = "git.ssh"
)

// CheckSigningKey reports whether data, the contents of the signing Secret,
// holds a usable private key of the given type. It fails early, at policy
// reconcile, rather than at the first write-back hours later.
func CheckSigningKey(keyType refluxv1.SigningKeyType, data map[string][]byte) error {
	passphrase := data[PassphraseField]
	switch keyType {
	case refluxv1.OpenPGPSigningKey, "":
		return checkOpenPGP(data[OpenPGPKeyField], passphrase)
	case refluxv1.SSHSigningKey:
		return checkSSH(data[SSHKeyField], passphrase)
	default:
		return &FieldError{Field: "spec.git.signingKey.type", Reason: fmt.Sprintf("unknown type %q", keyType)}
	}
}

func checkOpenPGP(armored, passphrase []byte) error {
	field := "secret key " + OpenPGPKeyField
	if len(armored) == 0 {
		return &FieldError{Field: field, Reason: "missing"}
	}
	entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return &FieldError{Field: field, Reason: fmt.Sprintf("not an armored OpenPGP key: %v", err)}
	}
	if len(entities) == 0 || entities[0].PrivateKey == nil {
		return &FieldError{Field: field, Reason: "holds no private key"}
	}
	key := entities[0].PrivateKey
	if key.Encrypted {
		if len(passphrase) == 0 {
			return &FieldError{Field: field, Reason: "private key is encrypted and no passphrase is set"}
		}
		if err := key.Decrypt(passphrase); err != nil {
			return &FieldError{Field: "secret key " + PassphraseField, Reason: fmt.Sprintf("does not decrypt the key: %v", err)}
		}
	}
	return nil
}

func checkSSH(identity, passphrase []byte) error {
	field := "secret key " + SSHKeyField
	if len(identity) == 0 {
		return &FieldError{Field: field, Reason: "missing"}
	}
	var err error
	if len(passphrase) > 0 {
		_, err = ssh.ParsePrivateKeyWithPassphrase(identity, passphrase)
	} else {
		_, err = ssh.ParsePrivateKey(identity)
	}
	if err != nil {
		return &FieldError{Field: field, Reason: fmt.Sprintf("not a usable SSH private key: %v", err)}
	}
	return nil
}
