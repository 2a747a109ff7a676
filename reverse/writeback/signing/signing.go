package signing

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/fluxcd/pkg/git/signature"
)

// Secret data keys.
const (
	// KeyOpenPGP holds an ASCII-armored OpenPGP private key ring.
	KeyOpenPGP = "git.asc"
	// KeySSH holds an SSH private key.
	KeySSH = "git.ssh"
	// KeyPassphrase optionally decrypts either key.
	KeyPassphrase = "passphrase"
)

// Signer signs the serialised commit; it is go-git's signer interface as
// re-exported by fluxcd/pkg/git/signature.
type Signer = signature.Signer

var (
	// ErrNoKey is returned when the Secret holds no signing key.
	ErrNoKey = errors.New("no signing key in secret data")
	// ErrAmbiguousKey is returned when the Secret holds both key kinds.
	ErrAmbiguousKey = errors.New("secret data holds both an OpenPGP and an SSH signing key")
	// ErrPassphrase is returned when an encrypted key has no passphrase or
	// the passphrase does not decrypt it.
	ErrPassphrase = errors.New("signing key passphrase missing or wrong")
	// ErrInvalidKey is returned when the key cannot be parsed or used.
	ErrInvalidKey = errors.New("invalid signing key")
)

// FromSecret returns a signer for the key in a Secret's data.
func FromSecret(data map[string][]byte) (Signer, error) {
	pgp, ssh := data[KeyOpenPGP], data[KeySSH]
	switch {
	case len(pgp) > 0 && len(ssh) > 0:
		return nil, ErrAmbiguousKey
	case len(pgp) > 0:
		return NewOpenPGP(pgp, data[KeyPassphrase])
	case len(ssh) > 0:
		return NewSSH(ssh, data[KeyPassphrase])
	default:
		return nil, fmt.Errorf("%w: want %q or %q", ErrNoKey, KeyOpenPGP, KeySSH)
	}
}

// NewOpenPGP returns a signer for the first entity of an armored private key
// ring, decrypting its keys with passphrase when they are encrypted.
func NewOpenPGP(armored, passphrase []byte) (Signer, error) {
	entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("%w: reading OpenPGP key ring: %w", ErrInvalidKey, err)
	}
	if len(entities) == 0 || entities[0].PrivateKey == nil {
		return nil, fmt.Errorf("%w: key ring has no private key", ErrInvalidKey)
	}
	entity := entities[0]
	if encrypted(entity) {
		if len(passphrase) == 0 {
			return nil, fmt.Errorf("%w: the OpenPGP key is encrypted", ErrPassphrase)
		}
		if err := entity.DecryptPrivateKeys(passphrase); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPassphrase, err)
		}
	}
	return signature.NewOpenPGPSigner(entity)
}

func encrypted(e *openpgp.Entity) bool {
	if e.PrivateKey.Encrypted {
		return true
	}
	for _, sub := range e.Subkeys {
		if sub.PrivateKey != nil && sub.PrivateKey.Encrypted {
			return true
		}
	}
	return false
}

// NewSSH returns an SSHSIG signer for an SSH private key.
func NewSSH(pem, passphrase []byte) (Signer, error) {
	s, err := signature.NewSSHSigner(pem, passphrase)
	switch {
	case errors.Is(err, signature.ErrSSHPassphraseRequired), errors.Is(err, x509.IncorrectPasswordError):
		return nil, fmt.Errorf("%w: %w", ErrPassphrase, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	return s, nil
}
