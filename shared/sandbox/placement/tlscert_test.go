package placement_test

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"testing"

	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// NewCert makes a usable pair whose recorded fingerprint is its
// certificate's, small enough for an ECS override, fresh every time.
func TestNewCert(t *testing.T) {
	a, err := placement.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair([]byte(a.CertPEM), []byte(a.KeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pair.Certificate[0])
	if a.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA256 %s, certificate %x", a.SHA256, sum)
	}
	if n := len(a.CertPEM) + len(a.KeyPEM); n > 1024 {
		t.Errorf("PEM pair is %d bytes", n)
	}
	b, err := placement.NewCert()
	if err != nil || b.SHA256 == a.SHA256 || b.KeyPEM == a.KeyPEM {
		t.Errorf("two certificates alike (%v)", err)
	}
}
