package sops

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// EncryptedRegex selects the Secret fields SOPS encrypts.
const EncryptedRegex = "^(data|stringData)$"

// formatVersion is written to the sops metadata. It tracks the sops module
// pinned in go.mod; the version package of sops is not imported because it
// drags in its CLI.
const formatVersion = "3.13.2"

var (
	// ErrNoRecipients is returned when there is nobody to encrypt for;
	// writing the Secret in clear instead is never an option.
	ErrNoRecipients = errors.New("no SOPS recipients configured")
	// ErrAlreadyEncrypted is returned for input that already carries sops
	// metadata.
	ErrAlreadyEncrypted = errors.New("input is already SOPS-encrypted")
)

// Recipients are the keys a Secret is encrypted for.
type Recipients struct {
	// Age holds age public keys ("age1...").
	Age []string
	// OpenPGP holds ASCII-armored OpenPGP public keys.
	OpenPGP [][]byte
}

func (r Recipients) empty() bool {
	return len(r.Age) == 0 && len(r.OpenPGP) == 0
}

// EncryptSecret renders s as YAML and encrypts its data and stringData.
func EncryptSecret(s *corev1.Secret, r Recipients) ([]byte, error) {
	if r.empty() {
		return nil, ErrNoRecipients
	}
	out := s.DeepCopy()
	out.APIVersion, out.Kind = "v1", "Secret"
	plain, err := yaml.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("rendering secret: %w", err)
	}
	return EncryptYAML(plain, r)
}

// EncryptYAML encrypts the data and stringData keys of a Secret manifest
// and returns the SOPS-encrypted YAML.
func EncryptYAML(plain []byte, r Recipients) ([]byte, error) {
	if r.empty() {
		return nil, ErrNoRecipients
	}
	store := sopsyaml.NewStore(&config.YAMLStoreConfig{})
	if _, err := store.LoadEncryptedFile(plain); err == nil {
		return nil, ErrAlreadyEncrypted
	}
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	group, cleanup, err := masterKeys(r)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:      []sops.KeyGroup{group},
		EncryptedRegex: EncryptedRegex,
		Version:        formatVersion,
	}}
	if err := encryptTree(&tree); err != nil {
		return nil, err
	}
	out, err := store.EmitEncryptedFile(tree)
	if err != nil {
		return nil, fmt.Errorf("emitting encrypted YAML: %w", err)
	}
	return out, nil
}

// encryptTree seals the data key for every recipient, encrypts the values
// and the MAC, as `sops encrypt` does.
func encryptTree(tree *sops.Tree) error {
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return fmt.Errorf("generating data key: %w", err)
	}
	for _, k := range tree.Metadata.KeyGroups[0] {
		if err := k.Encrypt(dataKey); err != nil {
			return fmt.Errorf("encrypting data key for %s: %w", k.ToString(), err)
		}
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return fmt.Errorf("encrypting values: %w", err)
	}
	tree.Metadata.LastModified = time.Now().UTC()
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("encrypting MAC: %w", err)
	}
	return nil
}

func masterKeys(r Recipients) (sops.KeyGroup, func(), error) {
	var group sops.KeyGroup
	for _, rcpt := range r.Age {
		k, err := sopsage.MasterKeyFromRecipient(rcpt)
		if err != nil {
			return nil, func() {}, fmt.Errorf("parsing age recipient %q: %w", rcpt, err)
		}
		group = append(group, keys.MasterKey(k))
	}
	pgpKeys, cleanup, err := openPGPKeys(r.OpenPGP)
	if err != nil {
		return nil, cleanup, err
	}
	return append(group, pgpKeys...), cleanup, nil
}
