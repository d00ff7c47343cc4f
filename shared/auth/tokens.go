package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// OwnerName is the principal of the data directory's first token (the one
// in DATA/token). It is an operator.
const OwnerName = "owner"

// FileName is the token file in a data directory.
const FileName = "tokens.json"

// MaxNameBytes bounds a principal's name.
const MaxNameBytes = 64

// Entry is one token principal as the file keeps it.
type Entry struct {
	Name      string    `json:"name"`
	SHA256    string    `json:"sha256"` // of the token, hex
	Operator  bool      `json:"operator,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Store is the token file of one data directory. It is safe for
// concurrent use; several processes may use the same file.
type Store struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	seen    stamp // of the file the entries were read from
	entries []Entry
}

// Open returns the store of dataDir's token file (which need not exist:
// then no token is valid).
func Open(dataDir string) *Store {
	return &Store{path: filepath.Join(dataDir, FileName), now: time.Now}
}

// Path is the token file.
func (s *Store) Path() string { return s.path }

// Hash is the hex SHA-256 of a token, as the file keeps it.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// NewToken returns a new random token (48 hex digits).
func NewToken() string { return ids.RandomHex(24) }

// Authenticate returns the principal whose token this is. An unknown or
// revoked token is ErrPermission; a token file that cannot be trusted is
// an error of its own.
func (s *Store) Authenticate(token string) (contracts.Principal, error) {
	entries, err := s.current()
	if err != nil {
		return contracts.Principal{}, err
	}
	got := sha256.Sum256([]byte(token))
	var found *Entry
	for i := range entries {
		want, err := hex.DecodeString(entries[i].SHA256)
		if err == nil && subtle.ConstantTimeCompare(got[:], want) == 1 {
			found = &entries[i]
		}
	}
	if token == "" || found == nil {
		return contracts.Principal{}, fmt.Errorf("unknown or revoked token: %w", contracts.ErrPermission)
	}
	return contracts.Principal{Name: found.Name, Operator: found.Operator}, nil
}

// Request authenticates the request's "Authorization: Bearer <token>"
// (api.Config.Authenticate).
func (s *Store) Request(r *http.Request) (contracts.Principal, error) {
	tok, ok := Bearer(r.Header.Get("Authorization"))
	if !ok {
		return contracts.Principal{}, fmt.Errorf("missing bearer token: %w", contracts.ErrPermission)
	}
	return s.Authenticate(tok)
}

// Bearer reads the credentials of an "Authorization: Bearer <token>"
// header; the scheme is case-insensitive (RFC 7235 §2.1).
func Bearer(h string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimLeft(cred, " ")
	return cred, cred != ""
}

// List returns the entries, sorted by name.
func (s *Store) List() ([]Entry, error) {
	entries, err := s.current()
	if err != nil {
		return nil, err
	}
	out := slices.Clone(entries)
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Add makes a new token for a new principal and returns it (the only time
// it is seen). A name already in the file is ErrExists.
func (s *Store) Add(name string, operator bool) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	tok := NewToken()
	err := s.update(func(entries []Entry) ([]Entry, error) {
		if slices.ContainsFunc(entries, func(e Entry) bool { return e.Name == name }) {
			return nil, fmt.Errorf("token %q: %w (revoke it first)", name, contracts.ErrExists)
		}
		return append(entries, Entry{Name: name, SHA256: Hash(tok), Operator: operator, CreatedAt: s.now().UTC()}), nil
	})
	if err != nil {
		return "", err
	}
	return tok, nil
}

// Revoke removes name's token; an unknown name is ErrNotFound. The owner's
// token is not revoked here: it is DATA/token, which `cairn dev` would
// restore (rotate it with `cairn dev --token`, or by removing DATA/token).
func (s *Store) Revoke(name string) error {
	if name == OwnerName {
		return fmt.Errorf("token %q is DATA/token, kept by cairn dev: rotate it with `cairn dev --token NEW` or by removing DATA/token and restarting: %w", name, contracts.ErrInvalid)
	}
	return s.update(func(entries []Entry) ([]Entry, error) {
		i := slices.IndexFunc(entries, func(e Entry) bool { return e.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("token %q: %w", name, contracts.ErrNotFound)
		}
		return slices.Delete(entries, i, i+1), nil
	})
}

// SetOwner makes token the owner's (OwnerName, an operator): `cairn dev`
// calls it at start with the token of DATA/token or --token. The entry
// keeps its creation time when only the token changes.
func (s *Store) SetOwner(token string) error {
	if token == "" {
		return fmt.Errorf("owner token: empty: %w", contracts.ErrInvalid)
	}
	return s.update(func(entries []Entry) ([]Entry, error) {
		i := slices.IndexFunc(entries, func(e Entry) bool { return e.Name == OwnerName })
		if i < 0 {
			return append(entries, Entry{Name: OwnerName, SHA256: Hash(token), Operator: true, CreatedAt: s.now().UTC()}), nil
		}
		entries[i].SHA256, entries[i].Operator = Hash(token), true
		return entries, nil
	})
}

// CheckName accepts 1–MaxNameBytes of letters, digits and . _ - @ (a
// name becomes the Owner of what its principal creates).
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameBytes {
		return fmt.Errorf("token name %q: want 1-%d characters: %w", name, MaxNameBytes, contracts.ErrInvalid)
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-@", c)
		if !ok {
			return fmt.Errorf("token name %q: only letters, digits and . _ - @: %w", name, contracts.ErrInvalid)
		}
	}
	return nil
}

// current returns the entries, re-reading the file if it changed since
// the last read.
func (s *Store) current() ([]Entry, error) {
	st, err := stat(s.path)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == s.seen { // unchanged (or still absent)
		return s.entries, nil
	}
	entries, read, err := readFile(s.path)
	if err != nil {
		return nil, err
	}
	s.seen, s.entries = read, entries
	return entries, nil
}

// update applies change to the file's entries under the file lock and
// writes the result whole.
func (s *Store) update(change func([]Entry) ([]Entry, error)) error {
	unlock, err := lockFile(s.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	entries, _, err := readFile(s.path)
	if err != nil {
		return err
	}
	next, err := change(slices.Clone(entries))
	if err != nil {
		return err
	}
	return writeFile(s.path, next)
}
