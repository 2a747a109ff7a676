package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// AuditTLS is the serving certificate a test's audit receiver (reflux's
// --audit-tls-cert-file and --audit-tls-key-file) serves HTTPS with:
// kube-apiserver sends its webhook's bearer token over HTTPS only.
type AuditTLS struct {
	CertFile, KeyFile string
	// CA is the PEM certificate that verifies it: it signs itself.
	CA []byte
}

// newAuditTLS writes a self-signed certificate for 127.0.0.1 into dir.
func newAuditTLS(dir string) (*AuditTLS, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the audit receiver's key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "testenv audit receiver"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(serviceAccountTokenTTL),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing the audit receiver's certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	t := &AuditTLS{CertFile: filepath.Join(dir, "audit-receiver.crt"), KeyFile: filepath.Join(dir, "audit-receiver.key"),
		CA: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	if err := os.WriteFile(t.CertFile, t.CA, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(t.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return t, nil
}
