package sops

import (
	"bytes"
	"io"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	sopspgp "github.com/getsops/sops/v3/pgp"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/reflux-dev/reflux/reverse/writeback/internal/testkeys"
)

func secret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "apps"},
		Data:       map[string][]byte{"password": []byte("hunter2")},
		StringData: map[string]string{"user": "admin"},
	}
}

func TestEncryptSecretAgeRoundTrip(t *testing.T) {
	g := NewWithT(t)
	id, err := age.GenerateX25519Identity()
	g.Expect(err).ToNot(HaveOccurred())
	other, err := age.GenerateX25519Identity()
	g.Expect(err).ToNot(HaveOccurred())

	enc, err := EncryptSecret(secret(), Recipients{Age: []string{id.Recipient().String(), other.Recipient().String()}})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(enc)).ToNot(ContainSubstring("aHVudGVyMg")) // base64 of hunter2
	g.Expect(string(enc)).ToNot(ContainSubstring("admin"))
	g.Expect(string(enc)).To(ContainSubstring("ENC[AES256_GCM"))
	g.Expect(string(enc)).To(ContainSubstring("name: db"), "metadata stays readable")
	g.Expect(string(enc)).To(ContainSubstring("encrypted_regex: ^(data|stringData)$"))

	got := decrypt(t, enc, func(k any) ([]byte, error) {
		ak, ok := k.(*sopsage.MasterKey)
		if !ok {
			return nil, nil
		}
		sopsage.ParsedIdentities{id}.ApplyToMasterKey(ak)
		return ak.Decrypt()
	})
	g.Expect(got.Data).To(HaveKeyWithValue("password", []byte("hunter2")))
	g.Expect(got.StringData).To(HaveKeyWithValue("user", "admin"))
	g.Expect(got.Name).To(Equal("db"))
}

func TestEncryptSecretOpenPGPRoundTrip(t *testing.T) {
	g := NewWithT(t)
	priv, pub := testkeys.OpenPGP(t, "ops", "ops@example.com", "")
	enc, err := EncryptSecret(secret(), Recipients{OpenPGP: [][]byte{pub}})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(enc)).To(ContainSubstring("BEGIN PGP MESSAGE"))

	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(priv))
	g.Expect(err).ToNot(HaveOccurred())
	got := decrypt(t, enc, func(k any) ([]byte, error) {
		pk, ok := k.(*sopspgp.MasterKey)
		if !ok {
			return nil, nil
		}
		block, err := armor.Decode(bytes.NewReader(pk.EncryptedDataKey()))
		if err != nil {
			return nil, err
		}
		md, err := openpgp.ReadMessage(block.Body, ring, nil, nil)
		if err != nil {
			return nil, err
		}
		return io.ReadAll(md.UnverifiedBody)
	})
	g.Expect(got.Data).To(HaveKeyWithValue("password", []byte("hunter2")))
}

func TestEncryptRefusals(t *testing.T) {
	g := NewWithT(t)
	_, err := EncryptSecret(secret(), Recipients{})
	g.Expect(err).To(MatchError(ErrNoRecipients))
	_, err = EncryptYAML([]byte("data: {}\n"), Recipients{})
	g.Expect(err).To(MatchError(ErrNoRecipients))
	_, err = EncryptYAML([]byte("data: {}\n"), Recipients{Age: []string{"not-a-key"}})
	g.Expect(err).To(HaveOccurred())
	_, err = EncryptYAML([]byte("data: {}\n"), Recipients{OpenPGP: [][]byte{[]byte("nope")}})
	g.Expect(err).To(HaveOccurred())

	id, _ := age.GenerateX25519Identity()
	r := Recipients{Age: []string{id.Recipient().String()}}
	enc, err := EncryptSecret(secret(), r)
	g.Expect(err).ToNot(HaveOccurred())
	_, err = EncryptYAML(enc, r)
	g.Expect(err).To(MatchError(ErrAlreadyEncrypted))
}

// decrypt recovers the data key with unseal (nil for keys it cannot
// open), checks the MAC and returns the Secret.
func decrypt(t *testing.T, enc []byte, unseal func(k any) ([]byte, error)) *corev1.Secret {
	t.Helper()
	g := NewWithT(t)
	store := sopsyaml.NewStore(&config.YAMLStoreConfig{})
	tree, err := store.LoadEncryptedFile(enc)
	g.Expect(err).ToNot(HaveOccurred())
	var dataKey []byte
	for _, k := range tree.Metadata.KeyGroups[0] {
		if dk, err := unseal(k); err == nil && dk != nil {
			dataKey = dk
			break
		}
	}
	g.Expect(dataKey).To(HaveLen(32))
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	g.Expect(err).ToNot(HaveOccurred())
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey,
		tree.Metadata.LastModified.Format(time.RFC3339))
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(stored).To(Equal(mac))
	plain, err := store.EmitPlainFile(tree.Branches)
	g.Expect(err).ToNot(HaveOccurred())
	var s corev1.Secret
	g.Expect(yaml.Unmarshal(plain, &s)).To(Succeed())
	return &s
}
