package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// The identity reflux commits as; the signing key carries the same one so
// `git verify-commit` shows a matching signer.
const (
	authorName  = "reflux"
	authorEmail = "reflux@example.com"
)

// signingKey is an armored OpenPGP key pair.
type signingKey struct {
	private, public []byte
}

// newSigningKey generates an unencrypted ed25519 key for the demo's
// author. A real installation brings its own key; this one lives only as
// long as the demo.
func newSigningKey() (signingKey, error) {
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	e, err := openpgp.NewEntity(authorName, "make demo", authorEmail, cfg)
	if err != nil {
		return signingKey{}, fmt.Errorf("generating signing key: %w", err)
	}
	public, err := armored(openpgp.PublicKeyType, e.Serialize)
	if err != nil {
		return signingKey{}, err
	}
	private, err := armored(openpgp.PrivateKeyType, func(w io.Writer) error {
		return e.SerializePrivateWithoutSigning(w, cfg)
	})
	if err != nil {
		return signingKey{}, err
	}
	return signingKey{private: private, public: public}, nil
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
