package ids

import (
	"crypto/rand"
	"encoding/hex"
)

// RandomHex returns nBytes random bytes from crypto/rand as 2·nBytes
// lowercase hex digits: for tokens, lease-owner suffixes and names that
// must not collide. It returns "" for nBytes ≤ 0.
//
// It never returns an error and never panics: crypto/rand.Read always fills
// the buffer (Go 1.24+); if the operating system's random source fails, the
// program crashes irrecoverably rather than use weak randomness.
func RandomHex(nBytes int) string {
	if nBytes <= 0 {
		return ""
	}
	b := make([]byte, nBytes)
	_, _ = rand.Read(b) // never fails: see above
	return hex.EncodeToString(b)
}
