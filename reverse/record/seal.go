package record

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
//
// The seal is kept twice: in the reflux.dev/seal annotation, written with
// the spec, and in status.seal, written with the status. Users write
// annotations (reflux.dev/dismiss is one), and a client that replaces them
// wholesale would take the seal away and have a record reflux wrote
// deleted as hand-made, with its history. Either copy proves the record.
// Since v2 the seal leaves out spec.lastSeen: reflux bumps that timestamp
// alone at most once a minute, with no status write, and a copy in status
// that went stale each minute would prove nothing. Nothing reflux writes
// to Git or decides on comes from lastSeen. v1 seals, over the whole
// spec, still verify.

// MinSealKey is the shortest key NewSealer accepts: HMAC-SHA256's block
// strength.
const MinSealKey = 32

// Seal versions: v1 covers the whole spec, v2 all but spec.lastSeen.
const (
	sealV1      = "v1."
	sealVersion = "v2."
)

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
	seal, err := s.seal(d)
	if err != nil {
		return err
	}
	a := d.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[refluxv1.SealAnnotation] = seal
	d.SetAnnotations(a)
	return nil
}

// SealStatus sets d's status.seal for its current namespace, name and
// spec; call it before each status write.
func (s *Sealer) SealStatus(d *refluxv1.Drift) error {
	seal, err := s.seal(d)
	if err != nil {
		return err
	}
	d.Status.Seal = seal
	return nil
}

func (s *Sealer) seal(d *refluxv1.Drift) (string, error) {
	mac, err := s.mac(d, sealVersion)
	if err != nil {
		return "", err
	}
	return sealVersion + base64.RawURLEncoding.EncodeToString(mac), nil
}

// Verify checks d's seals: nil when the annotation's or the status's
// matches the record, else ErrUnsealed (neither is there) or ErrBadSeal.
func (s *Sealer) Verify(d *refluxv1.Drift) error {
	annotation, annotated := d.GetAnnotations()[refluxv1.SealAnnotation]
	if !annotated && d.Status.Seal == "" {
		return ErrUnsealed
	}
	for _, v := range []string{annotation, d.Status.Seal} {
		if v == "" {
			continue
		}
		ok, err := s.matches(d, v)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return ErrBadSeal
}

// matches reports whether seal v is d's.
func (s *Sealer) matches(d *refluxv1.Drift, v string) (bool, error) {
	version := sealVersion
	if strings.HasPrefix(v, sealV1) {
		version = sealV1
	}
	got, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(v, version))
	if err != nil || !strings.HasPrefix(v, version) {
		return false, nil
	}
	want, err := s.mac(d, version)
	if err != nil {
		return false, err
	}
	return hmac.Equal(got, want), nil
}

// mac is the HMAC of the sealed content. encoding/json writes struct
// fields in declaration order and map keys sorted, and the apiserver
// round-trips every spec field unchanged (there are no defaults in the
// schema), so the bytes are the same before the write and after a read.
func (s *Sealer) mac(d *refluxv1.Drift, version string) ([]byte, error) {
	spec := d.Spec
	if version != sealV1 {
		spec.LastSeen = metav1.Time{}
	}
	content, err := json.Marshal(struct {
		Namespace string             `json:"namespace"`
		Name      string             `json:"name"`
		Spec      refluxv1.DriftSpec `json:"spec"`
	}{d.Namespace, d.Name, spec})
	if err != nil {
		return nil, fmt.Errorf("encoding drift record %s for its seal: %w", d.Name, err)
	}
	h := hmac.New(sha256.New, s.key)
	h.Write(content)
	return h.Sum(nil), nil
}
