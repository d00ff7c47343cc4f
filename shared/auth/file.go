package auth

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxFileBytes bounds the token file.
const maxFileBytes = 1 << 20

// fileBody is the token file: {"tokens": [entry, …]}.
type fileBody struct {
	Tokens []Entry `json:"tokens"`
}

// stamp identifies one version of the file: a rewrite is a new inode, an
// edit in place a new size or time.
type stamp struct {
	exists   bool
	dev, ino uint64
	size     int64
	mtime    int64
}

func stampOf(fi fs.FileInfo) stamp {
	st := stamp{exists: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino = uint64(sys.Dev), uint64(sys.Ino)
	}
	return st
}

// stat is the file's stamp without following a symlink; an absent file
// has the zero stamp.
func stat(path string) (stamp, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, nil
	}
	if err != nil {
		return stamp{}, fmt.Errorf("token file: %w", err)
	}
	return stampOf(fi), nil
}

// readFile reads the entries, trusting only a regular file of this user
// that no one else may read or write, opened without following a symlink.
// An absent file has no entries.
func readFile(path string) ([]Entry, stamp, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, stamp{}, nil
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, stamp{}, fmt.Errorf("token file %s is a symlink: refused", path)
	}
	if err != nil {
		return nil, stamp{}, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, stamp{}, fmt.Errorf("token file: %w", err)
	}
	switch sys, _ := fi.Sys().(*syscall.Stat_t); {
	case !fi.Mode().IsRegular():
		return nil, stamp{}, fmt.Errorf("token file %s is not a regular file: refused", path)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, stamp{}, fmt.Errorf("token file %s has mode %04o, others may use it: refused (want 0600)", path, fi.Mode().Perm())
	case sys == nil || int(sys.Uid) != os.Getuid():
		return nil, stamp{}, fmt.Errorf("token file %s belongs to another user: refused", path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, stamp{}, fmt.Errorf("token file: %w", err)
	}
	if len(raw) > maxFileBytes {
		return nil, stamp{}, fmt.Errorf("token file %s is over %d bytes: refused", path, maxFileBytes)
	}
	var body fileBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return nil, stamp{}, fmt.Errorf("token file %s: %v", path, err)
	}
	seen := map[string]bool{}
	for _, e := range body.Tokens {
		if err := CheckName(e.Name); err != nil {
			return nil, stamp{}, fmt.Errorf("token file %s: %w", path, err)
		}
		if h, err := hex.DecodeString(e.SHA256); err != nil || len(h) != 32 {
			return nil, stamp{}, fmt.Errorf("token file %s: token %q: sha256 is not 64 hex digits", path, e.Name)
		}
		if seen[e.Name] {
			return nil, stamp{}, fmt.Errorf("token file %s: token %q twice", path, e.Name)
		}
		seen[e.Name] = true
	}
	return body.Tokens, stampOf(fi), nil
}

// writeFile replaces the file with entries: a new 0600 file created
// exclusively beside it, synced, then renamed over it, so a reader never
// sees half a file and the write never goes through a planted symlink.
func writeFile(path string, entries []Entry) error {
	if entries == nil {
		entries = []Entry{}
	}
	raw, err := json.MarshalIndent(fileBody{Tokens: entries}, "", "  ")
	if err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	return WriteSecret(path, append(raw, '\n'))
}

// WriteSecret replaces the file at path with data, mode 0600: a new file
// created exclusively beside it (never through a planted symlink), synced,
// then renamed over it, so a reader never sees half of it. Its directory
// is created 0700 if missing.
func WriteSecret(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(path)+"-"+NewToken()[:16]+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o600) // whatever the umask
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path) // replaces a symlink itself, never its target
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing token file: %w", err)
	}
	return nil
}

// lockFile takes an exclusive flock on path (created if missing) and
// returns its release.
func lockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("locking token file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking token file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking token file: %w", err)
	}
	return func() { f.Close() }, nil
}
