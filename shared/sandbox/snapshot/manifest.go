package snapshot

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnrun/cairn/shared/contracts"
)

// ChunkSize is the size of every chunk but a file's last.
const ChunkSize = 4 << 20

// Defaults of Limits.
const (
	DefaultMaxBytes   = 1 << 30 // 1 GiB of file contents
	DefaultMaxEntries = 100_000 // directories, files and symlinks
	// MaxPath bounds one entry's path (Linux's PATH_MAX): a deeper entry
	// is left out, and so is what is below it.
	MaxPath = 4096
	// MaxPathBytes bounds the paths of one snapshot together, so a
	// manifest stays far below what the runtime decodes.
	MaxPathBytes = 32 << 20
)

// Limits bound what one snapshot holds; zero fields take the defaults.
type Limits struct {
	MaxBytes   int64
	MaxEntries int
	// LinkOwner is the uid whose files with more than one hard link are
	// kept (as separate copies): the commands' user, who could read them
	// anyway. Another user's hard-linked file is left out: a link to a
	// file the commands' user cannot read must not come back as its own.
	LinkOwner int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	return l
}

// Entry types.
const (
	TypeDir     = "dir"
	TypeFile    = "file"
	TypeSymlink = "symlink"
)

// Entry is one workspace entry. Path is workspace-relative with forward
// slashes; entries are in lexical walk order, so a directory comes before
// what it holds.
type Entry struct {
	Path string `json:"path,omitempty"`
	// PathB64 carries a path that is not UTF-8 (Linux names are bytes;
	// JSON strings are not), base64; Path is then empty. TargetB64 is the
	// same for a symlink's target.
	PathB64 string    `json:"path_b64,omitempty"`
	Type    string    `json:"type"`
	Mode    uint32    `json:"mode"`           // permission bits only
	ModTime time.Time `json:"mtime,omitzero"` // UTC; zero for a symlink
	Size    int64     `json:"size,omitempty"`
	Chunks  []string  `json:"chunks,omitempty"` // hex SHA-256 of each chunk, in order
	Target  string    `json:"target,omitempty"` // a symlink's target
	// TargetB64: see PathB64.
	TargetB64 string `json:"target_b64,omitempty"`
}

// setPath and setTarget store a name as text, or base64 when it is not
// UTF-8.
func (e *Entry) setPath(p string) {
	if utf8.ValidString(p) {
		e.Path = p
	} else {
		e.PathB64 = base64.StdEncoding.EncodeToString([]byte(p))
	}
}

func (e *Entry) setTarget(t string) {
	if utf8.ValidString(t) {
		e.Target = t
	} else {
		e.TargetB64 = base64.StdEncoding.EncodeToString([]byte(t))
	}
}

// Name is the entry's path as the bytes it had.
func (e Entry) Name() string { return unb64(e.Path, e.PathB64) }

// LinkTarget is a symlink's target as the bytes it had.
func (e Entry) LinkTarget() string { return unb64(e.Target, e.TargetB64) }

func unb64(text, b64 string) string {
	if b64 == "" {
		return text
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "" // Check refuses it
	}
	return string(b)
}

// mtime is t as a manifest keeps it: UTC, zero when JSON cannot say it
// (beyond year 9999).
func mtime(t time.Time) time.Time {
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}
	}
	return t.UTC()
}

// Manifest is a whole snapshot: every entry, and how many were left out
// (sockets, fifos, devices, hard-linked files of another user, paths over
// MaxPath).
type Manifest struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
	Skipped int     `json:"skipped,omitempty"`
}

// ManifestVersion is the Version this package writes and reads.
const ManifestVersion = 1

// Encode returns the manifest's JSON and its ID (the hex SHA-256 of it).
func (m Manifest) Encode() ([]byte, string) {
	b, _ := json.Marshal(m) // strings, numbers and slices of them: cannot fail
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// Totals counts the files and their bytes (a negative size, which Check
// refuses, counts as none).
func (m Manifest) Totals() (files int, bytes int64) {
	for _, e := range m.Entries {
		if e.Type == TypeFile {
			files++
			bytes += max(e.Size, 0)
		}
	}
	return files, bytes
}

// Check refuses a manifest that is not this package's: an unknown version
// or type, a path that is not clean and relative, a file whose chunks do
// not add up to its size, a chunk name that is not a SHA-256.
func (m Manifest) Check() error {
	if m.Version != ManifestVersion {
		return fmt.Errorf("snapshot manifest version %d (this build reads %d): %w", m.Version, ManifestVersion, contracts.ErrInvalid)
	}
	for _, e := range m.Entries {
		if (e.Path == "") == (e.PathB64 == "") || (e.TargetB64 != "" && e.Target != "") {
			return fmt.Errorf("snapshot manifest: an entry has both or neither of path and path_b64 (or both targets): %w", contracts.ErrInvalid)
		}
		if err := checkPath(e.Name()); err != nil {
			return err
		}
		switch e.Type {
		case TypeDir, TypeSymlink:
		case TypeFile:
			if e.Size < 0 {
				return fmt.Errorf("snapshot manifest: %.200q has size %d: %w", e.Name(), e.Size, contracts.ErrInvalid)
			}
			if want := chunks(e.Size); len(e.Chunks) != want {
				return fmt.Errorf("snapshot manifest: %s has %d bytes in %d chunks (want %d): %w", e.Path, e.Size, len(e.Chunks), want, contracts.ErrInvalid)
			}
			for _, c := range e.Chunks {
				if !isHash(c) {
					return fmt.Errorf("snapshot manifest: %s names chunk %.80q: %w", e.Path, c, contracts.ErrInvalid)
				}
			}
		default:
			return fmt.Errorf("snapshot manifest: %s has type %.20q: %w", e.Path, e.Type, contracts.ErrInvalid)
		}
	}
	return nil
}

// chunks is how many chunks hold size bytes (an empty file has none).
func chunks(size int64) int {
	return int((size + ChunkSize - 1) / ChunkSize)
}

// ChunkLen is the length chunk i of a file of size bytes must have.
func ChunkLen(size int64, i int) int64 {
	return min(size-int64(i)*ChunkSize, ChunkSize)
}

// checkPath accepts a clean, relative, slash-separated path below the root
// (a backslash is an ordinary byte of a Linux name).
func checkPath(p string) error {
	if p == "" || p == "." || len(p) > MaxPath || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("snapshot: path %.200q is not a clean path inside the workspace: %w", p, contracts.ErrInvalid)
	}
	return nil
}

func isHash(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// HashHex is the hex SHA-256 of b.
func HashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ChunkKey and ManifestKey are the blob keys of a session's chunks and
// snapshot manifests. Keys are per session: one session's snapshots never
// reveal, by deduplication, what another's workspace holds.
func ChunkKey(sessionID, sum string) string { return "workspace/" + sessionID + "/chunk/" + sum }

// ManifestKey is the blob key of the manifest of snapshot id.
func ManifestKey(sessionID, id string) string { return "workspace/" + sessionID + "/snapshot/" + id }

// Tar entry names of an export stream.
const (
	chunkPrefix   = "chunk/"
	manifestName  = "manifest.json"
	unchangedName = "unchanged" // its content: the id of the snapshot still current
)
