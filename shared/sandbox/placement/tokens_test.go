package placement_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

func TestMint(t *testing.T) {
	k1 := placement.Tokens{Key: bytes.Repeat([]byte{1}, 32)}
	k2 := placement.Tokens{Key: bytes.Repeat([]byte{2}, 32)}
	base := k1.Mint("ses_1", "ref1")
	if base != k1.Mint("ses_1", "ref1") {
		t.Fatal("Mint is not deterministic")
	}
	if len(base) != 64 {
		t.Fatalf("token %d chars, want 64 hex", len(base))
	}
	for name, other := range map[string]string{
		"other key":     k2.Mint("ses_1", "ref1"),
		"other ref":     k1.Mint("ses_1", "ref2"),
		"other session": k1.Mint("ses_2", "ref1"),
	} {
		if other == base {
			t.Errorf("%s: same token", name)
		}
	}
	if h := placement.HashHex(base); h == base || len(h) != 64 {
		t.Errorf("HashHex(token) = %q", h)
	}
	// sha256("abc"), the FIPS 180-2 test vector.
	if got := placement.HashHex("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("HashHex(abc) = %s", got)
	}
}

func TestTokensCheck(t *testing.T) {
	if err := (placement.Tokens{Key: make([]byte, 8)}).Check(); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("short key: %v, want ErrInvalid", err)
	}
	if err := (placement.Tokens{Key: make([]byte, 32)}).Check(); err != nil {
		t.Errorf("32-byte key: %v", err)
	}
}

func TestNewRef(t *testing.T) {
	a, b := placement.NewRef(), placement.NewRef()
	if a == b || len(a) != 32 {
		t.Fatalf("refs %q, %q: want distinct 32-hex", a, b)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "sandbox.key")
	const n = 8
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { keys[i], errs[i] = placement.LoadOrCreateKey(path) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("caller %d got another key than caller 0", i)
		}
	}
	if len(keys[0]) != placement.KeySize {
		t.Fatalf("key of %d bytes", len(keys[0]))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	again, err := placement.LoadOrCreateKey(path)
	if err != nil || !bytes.Equal(again, keys[0]) {
		t.Fatalf("reload: %v, same=%v", err, bytes.Equal(again, keys[0]))
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("key directory holds %d entries, want only the key (no temporaries)", len(entries))
	}

	short := filepath.Join(t.TempDir(), "short.key")
	if err := os.WriteFile(short, []byte("tiny"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := placement.LoadOrCreateKey(short); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("short key file: %v, want ErrInvalid", err)
	}
}
