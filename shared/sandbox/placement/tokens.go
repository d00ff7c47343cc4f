package placement

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// Environment variables sandboxd reads (see functions/sandboxd): the hex
// SHA-256 of its bearer token, in a container — where the task
// definition's command passes it on — its idle timeout, and the per-call
// limits of its commands (LimitsValue).
const (
	EnvTokenSHA256 = "SANDBOXD_TOKEN_SHA256"
	EnvIdleTimeout = "SANDBOXD_IDLE_TIMEOUT"
	EnvLimits      = "SANDBOXD_LIMITS"
)

// LimitsValue is the value of EnvLimits for a spec's limits: their JSON
// (contracts.SandboxLimits), or "" when there are none (the variable is
// then not set).
func LimitsValue(l contracts.SandboxLimits) string {
	if l == (contracts.SandboxLimits{}) {
		return ""
	}
	b, err := json.Marshal(l)
	if err != nil { // a struct of ints always marshals
		panic(err)
	}
	return string(b)
}

// KeySize is the length of a key made by LoadOrCreateKey; MinKeySize the
// shortest key a provider accepts.
const (
	KeySize    = 32
	MinKeySize = 16
)

// Tokens derives per-sandbox bearer tokens from a deployment key. Whoever
// holds Key can reconnect to any sandbox of the deployment, so the key is
// as secret as the runtime's other credentials.
type Tokens struct {
	Key []byte
}

// Check reports a key too short to derive tokens from (ErrInvalid).
func (t Tokens) Check() error {
	if len(t.Key) < MinKeySize {
		return fmt.Errorf("sandbox token key has %d bytes, need at least %d: %w", len(t.Key), MinKeySize, contracts.ErrInvalid)
	}
	return nil
}

// Mint returns the token of the sandbox recorded with ref for sessionID:
// hex HMAC-SHA256(Key, sessionID+"/"+ref). It is deterministic, so every
// process holding the key derives the same token from the record.
func (t Tokens) Mint(sessionID, ref string) string {
	m := hmac.New(sha256.New, t.Key)
	m.Write([]byte(sessionID + "/" + ref))
	return hex.EncodeToString(m.Sum(nil))
}

// NewRef returns a fresh random token reference (128 bits, hex).
func NewRef() string {
	return ids.RandomHex(16)
}

// HashHex is the hex SHA-256 of token: what sandboxd is given
// (SANDBOXD_TOKEN_SHA256) to check bearer tokens without knowing them.
func HashHex(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// LoadOrCreateKey returns the key stored at path, creating it (KeySize
// random bytes, mode 0600, parent directories 0700) if the file is absent.
// Creation is atomic: the key is written to a temporary file and linked into
// place, so concurrent callers all end up with the one key that won. A
// stored key shorter than MinKeySize is ErrInvalid.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		return checkKey(path, key)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading sandbox key %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating sandbox key directory %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return nil, fmt.Errorf("creating sandbox key %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	key = make([]byte, KeySize)
	rand.Read(key)
	_, werr := tmp.Write(key)
	if serr := tmp.Sync(); werr == nil {
		werr = serr
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("writing sandbox key %s: %w", path, werr)
	}
	// CreateTemp made the file 0600. Link fails if path exists: the first
	// creator wins and everyone else reads its key.
	if err := os.Link(tmp.Name(), path); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("installing sandbox key %s: %w", path, err)
		}
		key, err = os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading sandbox key %s: %w", path, err)
		}
		return checkKey(path, key)
	}
	return key, nil
}

func checkKey(path string, key []byte) ([]byte, error) {
	if len(key) < MinKeySize {
		return nil, fmt.Errorf("sandbox key %s has %d bytes, need at least %d: %w", path, len(key), MinKeySize, contracts.ErrInvalid)
	}
	return key, nil
}
