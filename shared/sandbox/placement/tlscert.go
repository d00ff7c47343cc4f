package placement

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// Environment variables carrying a sandbox's own TLS identity to sandboxd
// (PEM): with both set it serves only TLS (shared/sandbox/server). Like
// every SANDBOXD_* variable they never reach a command.
const (
	EnvTLSCert = "SANDBOXD_TLS_CERT"
	EnvTLSKey  = "SANDBOXD_TLS_KEY"
)

// certValidity is the validity period written into a sandbox certificate.
// Nothing checks it — the client trusts the pinned fingerprint, not dates
// or a CA — but a certificate must carry one; a sandbox lives far shorter.
const certValidity = 30 * 24 * time.Hour

// Cert is the TLS identity of one sandbox: a fresh ECDSA P-256 key and a
// self-signed certificate for it, and the certificate's fingerprint, which
// the sandbox record keeps (contracts.SandboxRecord.CertSHA256) and the
// client pins (remote.Options.CertSHA256).
type Cert struct {
	CertPEM, KeyPEM string
	// SHA256 is the hex SHA-256 of the certificate's DER.
	SHA256 string
}

// NewCert makes a new sandbox identity. The certificate names no host (the
// client dials an address that changes and checks only the fingerprint);
// its PEM pair is under 1 KiB, small enough for an ECS container override.
func NewCert() (Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Cert{}, fmt.Errorf("sandbox certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return Cert{}, fmt.Errorf("sandbox certificate: %w", err)
	}
	now := time.Now().UTC()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "cairn sandbox"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Cert{}, fmt.Errorf("sandbox certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Cert{}, fmt.Errorf("sandbox certificate: %w", err)
	}
	sum := sha256.Sum256(der)
	return Cert{
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})),
		SHA256:  hex.EncodeToString(sum[:]),
	}, nil
}
