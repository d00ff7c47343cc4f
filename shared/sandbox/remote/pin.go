package remote

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// ErrCertMismatch is matched (errors.Is) by the error of a call whose
// server presented a certificate other than the pinned one; it also wraps
// contracts.ErrUnavailable.
var ErrCertMismatch = errors.New("the sandbox's TLS certificate is not the pinned one")

// pinError is what VerifyConnection returns for another certificate.
type pinError struct{ got string }

func (e *pinError) Error() string {
	return fmt.Sprintf("%v (presented sha256 %s)", ErrCertMismatch, e.got)
}

func (e *pinError) Is(target error) bool { return target == ErrCertMismatch }

// pinMismatch reports whether err (from http.Client.Do) is a pin failure.
func pinMismatch(err error) bool {
	var pe *pinError
	return errors.As(err, &pe)
}

// PinnedTLSConfig is the client TLS configuration of a sandbox whose
// certificate has the hex SHA-256 certSHA256: the usual chain and host name
// verification is off (InsecureSkipVerify — there is no CA and the address
// changes) and replaced by an exact, constant-time comparison of the leaf
// certificate's fingerprint in VerifyConnection, which crypto/tls runs
// before the handshake completes, so no request leaves before it passed.
// TLS 1.3 only (both ends are cairn).
func PinnedTLSConfig(certSHA256 string) (*tls.Config, error) {
	want, err := hex.DecodeString(certSHA256)
	if err != nil || len(want) != sha256.Size {
		return nil, fmt.Errorf("remote sandbox: the pinned certificate fingerprint must be %d hex digits: %w", 2*sha256.Size, contracts.ErrInvalid)
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // only ever together with the pin below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return &pinError{got: "none"}
			}
			sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if subtle.ConstantTimeCompare(sum[:], want) != 1 {
				return &pinError{got: hex.EncodeToString(sum[:])}
			}
			return nil
		},
	}, nil
}

// pinnedHTTPClient returns a client like base (NewHTTPClient when nil) with
// a transport of its own that accepts only the pinned certificate.
func pinnedHTTPClient(base *http.Client, connectTimeout time.Duration, certSHA256 string) (*http.Client, error) {
	tc, err := PinnedTLSConfig(certSHA256)
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = NewHTTPClient(connectTimeout)
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	tr, ok := rt.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("remote sandbox: a pinned certificate needs an *http.Transport to pin (HTTPClient has %T): %w", rt, contracts.ErrInvalid)
	}
	tr = tr.Clone()
	tr.TLSClientConfig = tc
	hc := *base
	hc.Transport = tr
	return &hc, nil
}
