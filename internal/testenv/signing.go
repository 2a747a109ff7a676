package testenv

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// SigningKey is an armored OpenPGP key pair: Private in the format a
// ReverseSyncPolicy's signing Secret holds as `git.asc` (Flux's
// image-automation-controller's), Public for `gpg --import` and for
// go-git's commit verification.
type SigningKey struct {
	Private, Public []byte
}

// NewSigningKey generates an unencrypted ed25519 key for the identity
// "name (comment) <email>". It lives only as long as the test or demo that
// made it.
func NewSigningKey(name, comment, email string) (SigningKey, error) {
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	e, err := openpgp.NewEntity(name, comment, email, cfg)
	if err != nil {
		return SigningKey{}, fmt.Errorf("generating signing key: %w", err)
	}
	public, err := armored(openpgp.PublicKeyType, e.Serialize)
	if err != nil {
		return SigningKey{}, err
	}
	private, err := armored(openpgp.PrivateKeyType, func(w io.Writer) error {
		return e.SerializePrivateWithoutSigning(w, cfg)
	})
	if err != nil {
		return SigningKey{}, err
	}
	return SigningKey{Private: private, Public: public}, nil
}

// armored runs serialize into an armor block of blockType.
func armored(blockType string, serialize func(io.Writer) error) ([]byte, error) {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, blockType, nil)
	if err != nil {
		return nil, fmt.Errorf("armoring %s: %w", blockType, err)
	}
	if err := serialize(w); err != nil {
		return nil, fmt.Errorf("serializing %s: %w", blockType, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("closing %s armor: %w", blockType, err)
	}
	return buf.Bytes(), nil
}
