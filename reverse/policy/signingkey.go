package policy

import (
	"fmt"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/writeback/signing"
)

// Keys of the signing Secret. They are the keys write-back signs with
// (reverse/writeback/signing): `git.asc` and an optional `passphrase` as
// Flux's image-automation-controller reads them, or `git.ssh`.
const (
	// OpenPGPKeyField holds an armored OpenPGP private key.
	OpenPGPKeyField = signing.KeyOpenPGP
	// PassphraseField optionally decrypts the private key.
	PassphraseField = signing.KeyPassphrase
	// SSHKeyField holds a PEM or OpenSSH private key.
	SSHKeyField = signing.KeySSH
)

// CheckSigningKey reports whether data, the contents of the signing Secret,
// holds a usable private key of the given type. It builds the very signer
// write-back will use, so a key that passes here signs later, and it fails
// early, at policy reconcile, rather than at the first write-back hours
// later.
func CheckSigningKey(keyType refluxv1.SigningKeyType, data map[string][]byte) error {
	var field string
	var err error
	switch keyType {
	case refluxv1.OpenPGPSigningKey, "":
		field = OpenPGPKeyField
		if len(data[field]) > 0 {
			_, err = signing.NewOpenPGP(data[field], data[PassphraseField])
		}
	case refluxv1.SSHSigningKey:
		field = SSHKeyField
		if len(data[field]) > 0 {
			_, err = signing.NewSSH(data[field], data[PassphraseField])
		}
	default:
		return &FieldError{Field: "spec.git.signingKey.type", Reason: fmt.Sprintf("unknown type %q", keyType)}
	}
	switch {
	case len(data[field]) == 0:
		return &FieldError{Field: "secret key " + field, Reason: "missing"}
	case err != nil:
		return &FieldError{Field: "secret key " + field, Reason: fmt.Sprintf("not a usable %s signing key: %v", keyType, err)}
	}
	return nil
}
