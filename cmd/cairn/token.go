package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cairnrun/cairn/shared/auth"
)

// maxTokenBytes bounds a token read back from DATA/token.
const maxTokenBytes = 256

// keepOwnerToken makes tok the owner's: DATA/token (which the CLI reads)
// and the "owner" entry of DATA/tokens.json (an operator; see shared/auth).
func keepOwnerToken(data, tok string) error {
	if err := writeTokenFile(data, tok); err != nil {
		return err
	}
	if err := auth.Open(data).SetOwner(tok); err != nil {
		return fmt.Errorf("recording the owner's token: %w", err)
	}
	return nil
}

// serverToken is the owner's token `cairn dev` serves with: the one given (--token
// or CAIRN_TOKEN), else the one DATA/token holds from an earlier run — so
// clients keep working across restarts — else a new random one. A token
// file that is not a regular file of ours (a symlink, a FIFO, another
// user's), or that others could read, or whose content is not a token, is
// not trusted: a new token replaces it. fresh reports a new token.
func serverToken(data, given string) (tok string, fresh bool, err error) {
	if given != "" {
		if !validToken(given) {
			return "", false, fmt.Errorf("--token: want 1-%d printable ASCII characters without spaces", maxTokenBytes)
		}
		return given, false, nil
	}
	if t, ok := readTokenFile(filepath.Join(data, "token")); ok {
		return t, false, nil
	}
	return newToken(), true, nil
}

// readTokenFile reads path without following a symlink, and only when it
// is a regular file owned by this user that no one else may read.
func readTokenFile(path string) (string, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return "", false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+2))
	if err != nil {
		return "", false
	}
	t := strings.TrimSpace(string(b))
	return t, validToken(t)
}

func validToken(t string) bool {
	if t == "" || len(t) > maxTokenBytes {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] >= 0x7f {
			return false
		}
	}
	return true
}

// writeTokenFile (re)writes DATA/token with mode 0600: a new file created
// exclusively beside it, then renamed over it, so the write never goes
// through a symlink or a hard link planted there and a reader never sees
// half a token.
func writeTokenFile(data, tok string) error {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	path := filepath.Join(data, "token")
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("writing token file: %s is a directory", path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("writing token file: %w", err)
	}
	return auth.WriteSecret(path, []byte(tok+"\n"))
}
