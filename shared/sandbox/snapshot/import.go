package snapshot

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Import writes a workspace stream (Restore writes one: a plain tar of
// directories, regular files and symlinks, parents first) into root,
// through root, so no name can leave it. Existing files are replaced; own,
// when set, is called on every entry written (sandboxd gives them to the
// commands' user). It returns how many entries it wrote.
func Import(ctx context.Context, root *os.Root, r io.Reader, own func(name string) error) (int, error) {
	tr := tar.NewReader(r)
	type dirMeta struct {
		name string
		mode fs.FileMode
		t    time.Time
	}
	// Directories are made 0700 and get their mode and mtime last: a
	// read-only one must still take what goes in it, and writing into a
	// directory moves its mtime.
	var dirs []dirMeta
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("restoring workspace: reading the stream: %v: %w", err, contracts.ErrInvalid)
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if err := checkPath(h.Name); err != nil {
			return n, fmt.Errorf("restoring workspace: %w", err)
		}
		mode := fs.FileMode(h.Mode) & fs.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.Mkdir(h.Name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return n, fmt.Errorf("restoring workspace: %w", err)
			}
			dirs = append(dirs, dirMeta{h.Name, mode, h.ModTime})
		case tar.TypeReg:
			if err := writeFile(root, h.Name, tr, h.Size); err != nil {
				return n, err
			}
			if err := root.Chmod(h.Name, mode); err != nil {
				return n, fmt.Errorf("restoring workspace: %w", err)
			}
			if settable(h.ModTime) {
				if err := root.Chtimes(h.Name, h.ModTime, h.ModTime); err != nil {
					return n, fmt.Errorf("restoring workspace: %w", err)
				}
			}
		case tar.TypeSymlink:
			if err := root.Remove(h.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return n, fmt.Errorf("restoring workspace: %w", err)
			}
			if err := root.Symlink(h.Linkname, h.Name); err != nil {
				return n, fmt.Errorf("restoring workspace: %w", err)
			}
		default:
			return n, fmt.Errorf("restoring workspace: %s has tar type %q: %w", h.Name, h.Typeflag, contracts.ErrInvalid)
		}
		if own != nil {
			if err := own(h.Name); err != nil {
				return n, fmt.Errorf("restoring workspace: %w", err)
			}
		}
		n++
	}
	for i := len(dirs) - 1; i >= 0; i-- { // the deepest first: a parent's own stay as set
		if err := root.Chmod(dirs[i].name, dirs[i].mode); err != nil {
			return n, fmt.Errorf("restoring workspace: %w", err)
		}
		if !settable(dirs[i].t) {
			continue
		}
		if err := root.Chtimes(dirs[i].name, dirs[i].t, dirs[i].t); err != nil {
			return n, fmt.Errorf("restoring workspace: %w", err)
		}
	}
	return n, nil
}

// writeFile replaces name with exactly size bytes of r. A symlink in its
// place is removed first, not followed.
func writeFile(root *os.Root, name string, r io.Reader, size int64) error {
	if fi, err := root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		if err := root.RemoveAll(name); err != nil {
			return fmt.Errorf("restoring workspace: %w", err)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return fmt.Errorf("restoring workspace: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("restoring workspace: %s is not a regular file: %w", name, contracts.ErrConflict)
	}
	_, err = io.CopyN(f, r, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restoring workspace: writing %s: %w", name, err)
	}
	return nil
}

// settable: os.Chtimes passes nanoseconds since 1970 in an int64, so a time
// outside 1678–2262 would land on another date; such a file keeps the time
// of its restore instead.
func settable(t time.Time) bool {
	y := t.Year()
	return !t.IsZero() && y > 1678 && y < 2262
}
