package branches

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/decrypt"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
)

// shopDriftSet lets table cases mutate a set in place.
type shopDriftSet struct{ reverse.DriftSet }

// secretSet is the shop with a drifted DB password, as records hold it:
// values masked.
func secretSet(url string) refluxv1.Drift {
	d := refluxv1.Drift{}
	d.Name = "secret-checkout-db-1"
	d.Spec.Object = refluxv1.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "checkout-db"}
	d.Spec.Fields = []refluxv1.DriftField{{Pointer: "/data/DB_PASSWORD", ChangeType: refluxv1.ChangeUpdate,
		GitValue: `"*** (before)"`, LiveValue: `"*** (after)"`, Action: refluxv1.MergeAction, Severity: refluxv1.SeverityHigh,
		Origin: &refluxv1.FieldOrigin{File: "base/db-secret.yaml", Kind: "resource"}}}
	return d
}

func TestSecretIsWrittenSOPSEncryptedForAgeRecipients(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	id, err := age.GenerateX25519Identity()
	g.Expect(err).ToNot(HaveOccurred())

	set := shopSet(url)
	set.Records = []refluxv1.Drift{secretSet(url)}
	set.Policy.Spec.Git.Encryption = &refluxv1.Encryption{Age: []string{id.Recipient().String()}}
	set.Spec.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops"}
	set.LiveSecrets = map[string]map[string][]byte{
		"shop/checkout-db": {"DB_USER": []byte("checkout"), "DB_PASSWORD": []byte("rotated-at-2am")},
	}
	proposals, err := newWriter(t).Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(proposals).To(HaveLen(1))
	g.Expect(proposals[0].Outcome).To(Equal(refluxv1.BranchPushedReason), proposals[0].Reason)

	dir := clone(t, srv, proposals[0].Branch)
	enc, err := os.ReadFile(filepath.Join(dir, "base/db-secret.yaml"))
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(enc)).ToNot(ContainSubstring("rotated-at-2am"), "no plaintext in Git")
	g.Expect(string(enc)).To(ContainSubstring("ENC["))
	g.Expect(string(enc)).To(ContainSubstring(id.Recipient().String()))
	// The whole history of the branch never held the plaintext either.
	g.Expect(run(t, dir, "git", "log", "-p", "--all")).ToNot(ContainSubstring("rotated-at-2am"))

	t.Setenv("SOPS_AGE_KEY", id.String())
	plain, err := decrypt.DataWithFormat(enc, formats.Yaml)
	g.Expect(err).ToNot(HaveOccurred())
	secret := &corev1.Secret{}
	g.Expect(yaml.Unmarshal(plain, secret)).To(Succeed())
	g.Expect(string(secret.Data["DB_PASSWORD"])).To(Equal("rotated-at-2am"))
	g.Expect(string(secret.Data["DB_USER"])).To(Equal("checkout"), "the other keys are kept")
	g.Expect(secret.Name).To(Equal("checkout-db"))
}

func TestSecretRefusals(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(s *shopDriftSet)
		reason string
	}{
		{"no recipients", func(s *shopDriftSet) { s.Policy.Spec.Git.Encryption = nil }, "no recipients"},
		{"no decryption on the Kustomization", func(s *shopDriftSet) { s.Spec.Spec.Decryption = nil }, "no SOPS decryption"},
		{"live Secret unavailable", func(s *shopDriftSet) { s.LiveSecrets = nil }, "not available"},
		{"recorded from the audit log: content never read", func(s *shopDriftSet) {
			s.Records[0].Spec.Fields = []refluxv1.DriftField{{Pointer: refluxv1.WholeObjectPointer, ChangeType: refluxv1.ChangeUpdate,
				Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh, FluxReverts: true}}
			s.LiveSecrets = nil
		}, "does not read this Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, url := gitServer(t)
			set := shopDriftSet{shopSet(url)}
			set.Records = []refluxv1.Drift{secretSet(url)}
			set.Policy.Spec.Git.Encryption = &refluxv1.Encryption{Age: []string{id.Recipient().String()}}
			set.Spec.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops"}
			set.LiveSecrets = map[string]map[string][]byte{"shop/checkout-db": {"DB_PASSWORD": []byte("x")}}
			tt.mutate(&set)
			proposals, err := newWriter(t).Write(context.Background(), set.DriftSet)
			g.Expect(proposals).To(HaveLen(1))
			if err == nil {
				g.Expect(proposals[0].Outcome).To(Or(Equal(refluxv1.RefusedReason), Equal(refluxv1.ConflictReason)))
			}
			g.Expect(proposals[0].Reason).To(ContainSubstring(tt.reason))
			heads := run(t, "", "git", "ls-remote", "--heads", srv.HTTPAddressWithCredentials()+"/shop.git")
			g.Expect(strings.Count(heads, "refs/heads/")).To(Equal(1), "nothing pushed")
		})
	}
}

func TestSecretIsWrittenSOPSEncryptedForPGPRecipients(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServer(t)
	entity, err := openpgp.NewEntity("ops", "sops", "ops@example.com", nil)
	g.Expect(err).ToNot(HaveOccurred())
	var pub, priv bytes.Buffer
	w, _ := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	g.Expect(entity.Serialize(w)).To(Succeed())
	w.Close()
	w, _ = armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	g.Expect(entity.SerializePrivate(w, nil)).To(Succeed())
	w.Close()

	set := shopSet(url)
	set.Records = []refluxv1.Drift{secretSet(url)}
	set.Policy.Spec.Git.Encryption = &refluxv1.Encryption{PGP: []string{pub.String()}}
	set.Spec.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops"}
	set.LiveSecrets = map[string]map[string][]byte{
		"shop/checkout-db": {"DB_USER": []byte("checkout"), "DB_PASSWORD": []byte("rotated-at-3am")},
	}
	proposals, err := newWriter(t).Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(proposals[0].Outcome).To(Equal(refluxv1.BranchPushedReason), proposals[0].Reason)
	dir := clone(t, srv, proposals[0].Branch)
	enc, err := os.ReadFile(filepath.Join(dir, "base/db-secret.yaml"))
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(enc)).ToNot(ContainSubstring("rotated-at-3am"))
	fp := strings.ToUpper(hex.EncodeToString(entity.PrimaryKey.Fingerprint))
	g.Expect(string(enc)).To(ContainSubstring(fp), "encrypted for the policy's OpenPGP key")

	// Decrypt with the real gpg, as a human with the private key would.
	home := t.TempDir()
	keyFile := filepath.Join(home, "key.asc")
	g.Expect(os.WriteFile(keyFile, priv.Bytes(), 0o600)).To(Succeed())
	t.Setenv("GNUPGHOME", home)
	run(t, "", "gpg", "--batch", "--import", keyFile)
	plain, err := decrypt.DataWithFormat(enc, formats.Yaml)
	g.Expect(err).ToNot(HaveOccurred())
	secret := &corev1.Secret{}
	g.Expect(yaml.Unmarshal(plain, secret)).To(Succeed())
	g.Expect(string(secret.Data["DB_PASSWORD"])).To(Equal("rotated-at-3am"))
}
