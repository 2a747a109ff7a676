package record

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// Why an HMAC, and over what. Write-back turns a record's fields into a
// commit, so a record anyone with create rights on Drift could write
// would let them push to the config repository under reflux's signature.
// RBAC and config/admission's policy keep such users out, but neither is
// guaranteed to be installed; the seal makes reflux itself refuse. A
// signature with a public key would prove nothing more here (only reflux
// ever verifies), and an HMAC needs no key distribution: one Secret that
// only reflux's ServiceAccount reads.
//
// The seal covers the namespace, the name and the spec: what the record
// claims was seen, and where. Status is reflux's own bookkeeping, written
// through the status subresource, which config/admission restricts and
// which reflux recomputes from the spec and the cluster; covering it
// would cost a second request per status change.

// MinSealKey is the shortest key NewSealer accepts: HMAC-SHA256's block
// strength.
const MinSealKey = 32

const sealVersion = "v1."

var (
	// ErrUnsealed: the record carries no seal.
	ErrUnsealed = errors.New("drift record has no reflux seal")
	// ErrBadSeal: the seal does not match the record.
	ErrBadSeal = errors.New("drift record's seal does not match its spec")
)

// Sealer seals and verifies Drift records.
type Sealer struct {
	key []byte
}

// NewSealer returns a Sealer with key, which must be at least MinSealKey
// bytes.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) < MinSealKey {
		return nil, fmt.Errorf("drift record key is %d bytes, want at least %d", len(key), MinSealKey)
	}
	return &Sealer{key: append([]byte(nil), key...)}, nil
}

// Seal sets d's seal annotation for its current namespace, name and spec.
func (s *Sealer) Seal(d *refluxv1.Drift) error {
	mac, err := s.mac(d)
	if err != nil {
		return err
	}
	a := d.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[refluxv1.SealAnnotation] = sealVersion + base64.RawURLEncoding.EncodeToString(mac)
	d.SetAnnotations(a)
	return nil
}

// Verify checks d's seal: nil, ErrUnsealed or ErrBadSeal.
func (s *Sealer) Verify(d *refluxv1.Drift) error {
	v, ok := d.GetAnnotations()[refluxv1.SealAnnotation]
	if !ok {
		return ErrUnsealed
	}
	got, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(v, sealVersion))
	if err != nil || !strings.HasPrefix(v, sealVersion) {
		return ErrBadSeal
	}
	want, err := s.mac(d)
	if err != nil {
		return err
	}
	if !hmac.Equal(got, want) {
		return ErrBadSeal
	}
	return nil
}

// mac is the HMAC of the sealed content. encoding/json writes struct
// fields in declaration order and map keys sorted, and the apiserver
// round-trips every spec field unchanged (there are no defaults in the
// schema), so the bytes are the same before the write and after a read.
func (s *Sealer) mac(d *refluxv1.Drift) ([]byte, error) {
	content, err := json.Marshal(struct {
		Namespace string             `json:"namespace"`
		Name      string             `json:"name"`
		Spec      refluxv1.DriftSpec `json:"spec"`
	}{d.Namespace, d.Name, d.Spec})
	if err != nil {
		return nil, fmt.Errorf("encoding drift record %s for its seal: %w", d.Name, err)
	}
	h := hmac.New(sha256.New, s.key)
	h.Write(content)
	return h.Sum(nil), nil
}
