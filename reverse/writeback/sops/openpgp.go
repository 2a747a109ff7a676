package sops

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/getsops/sops/v3/keys"
	sopspgp "github.com/getsops/sops/v3/pgp"
)

// openPGPKeys returns sops master keys for armored public keys. sops reads
// OpenPGP recipients from a key ring file, so the keys are written to a
// private temporary ring that cleanup removes; nothing touches the
// machine's GnuPG home.
func openPGPKeys(armored [][]byte) ([]keys.MasterKey, func(), error) {
	noop := func() {}
	if len(armored) == 0 {
		return nil, noop, nil
	}
	var ring bytes.Buffer
	var fingerprints []string
	for i, a := range armored {
		entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(a))
		if err != nil || len(entities) == 0 {
			return nil, noop, fmt.Errorf("parsing OpenPGP recipient %d: %w", i, err)
		}
		for _, e := range entities {
			if err := e.Serialize(&ring); err != nil {
				return nil, noop, fmt.Errorf("serialising OpenPGP recipient %d: %w", i, err)
			}
			fingerprints = append(fingerprints, strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint)))
		}
	}
	dir, err := os.MkdirTemp("", "reflux-sops-")
	if err != nil {
		return nil, noop, fmt.Errorf("creating key ring dir: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	path := filepath.Join(dir, "pubring.gpg")
	if err := os.WriteFile(path, ring.Bytes(), 0o600); err != nil {
		return nil, cleanup, fmt.Errorf("writing key ring: %w", err)
	}
	var out []keys.MasterKey
	for _, fp := range fingerprints {
		k := sopspgp.NewMasterKeyFromFingerprint(fp)
		sopspgp.PubRing(path).ApplyToMasterKey(k)
		out = append(out, k)
	}
	return out, cleanup, nil
}
