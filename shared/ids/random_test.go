package ids_test

import (
	"regexp"
	"testing"

	"github.com/cairnrun/cairn/shared/ids"
)

func TestRandomHex(t *testing.T) {
	for _, tc := range []struct {
		nBytes int
		want   string // pattern of the result
	}{
		{-1, `^$`},
		{0, `^$`},
		{1, `^[0-9a-f]{2}$`},
		{6, `^[0-9a-f]{12}$`},
		{16, `^[0-9a-f]{32}$`},
	} {
		if got := ids.RandomHex(tc.nBytes); !regexp.MustCompile(tc.want).MatchString(got) {
			t.Errorf("RandomHex(%d) = %q, want %s", tc.nBytes, got, tc.want)
		}
	}
}

func TestRandomHexDiffers(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		h := ids.RandomHex(8)
		if seen[h] {
			t.Fatalf("RandomHex(8) repeated %q within 1000 calls", h)
		}
		seen[h] = true
	}
}

func ExampleRandomHex() {
	token := ids.RandomHex(16) // 32 hex digits, 128 random bits
	_ = token
}
