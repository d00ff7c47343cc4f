package unique

import (
	"crypto/rand"
	"strings"
	"testing"
)

// Prefix returns an id prefix unique to this test and this run: the test
// name with non-alphanumerics as '-', then 8 random characters.
func Prefix(t *testing.T) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, t.Name())
	return name + "-" + strings.ToLower(rand.Text()[:8])
}
