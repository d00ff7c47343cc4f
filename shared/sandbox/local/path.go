package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cairnrun/cairn/shared/contracts"
)

// cleanRel validates a workspace-relative path lexically and returns it
// cleaned with forward slashes ("" becomes "."). Absolute paths, NUL bytes and
// any ".." that climbs above the workspace are refused with ErrPermission.
func cleanRel(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte: %w", p, contracts.ErrPermission)
	}
	if p == "" {
		return ".", nil
	}
	if path.IsAbs(p) || filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q is absolute; paths are relative to the workspace: %w", p, contracts.ErrPermission)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q escapes the workspace: %w", p, contracts.ErrPermission)
	}
	return c, nil
}

// within reports whether host path p is root or below it.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// resolve maps a workspace-relative path to a host path inside the workspace
// with every symlink resolved. It returns the cleaned relative path too. It
// checks a path that is used later, so it serves only Exec's working
// directory; the file methods use the os.Root (see below).
//
// The existing prefix of the path is resolved with EvalSymlinks and must stay
// inside the root; the not-yet-existing tail is appended to it verbatim (it
// contains no symlinks, since its first component does not exist). A dangling
// symlink on the way is refused, because its target could be created outside
// the workspace.
func (l *Sandbox) resolve(p string) (host, rel string, err error) {
	rel, err = cleanRel(p)
	if err != nil {
		return "", "", err
	}
	if rel == "." {
		return l.root, rel, nil
	}
	full := filepath.Join(l.root, filepath.FromSlash(rel))
	real, evalErr := filepath.EvalSymlinks(full)
	if evalErr == nil {
		if !within(l.root, real) {
			return "", "", fmt.Errorf("path %q resolves outside the workspace: %w", rel, contracts.ErrPermission)
		}
		return real, rel, nil
	}

	// Part of the path does not resolve: find the deepest existing prefix by
	// Lstat, walking down from the root, and confine that first, so that an
	// error past an escaping symlink never tells what lies outside.
	comps := strings.Split(rel, "/")
	existing := l.root
	var tailErr error
	i := 0
	for ; i < len(comps); i++ {
		next := filepath.Join(existing, comps[i])
		if _, err := os.Lstat(next); err != nil {
			tailErr = err
			break
		}
		existing = next
	}
	real, err = filepath.EvalSymlinks(existing)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("path %q goes through a dangling symlink: %w", rel, contracts.ErrPermission)
		}
		return "", "", l.pathError("resolving", rel, err)
	}
	if !within(l.root, real) {
		return "", "", fmt.Errorf("path %q resolves outside the workspace: %w", rel, contracts.ErrPermission)
	}
	if tailErr == nil {
		tailErr = evalErr // e.g. a symlink loop
	}
	if !errors.Is(tailErr, fs.ErrNotExist) {
		return "", "", l.pathError("resolving", rel, tailErr)
	}
	// The tail does not exist, so it holds no symlinks: append it verbatim.
	return filepath.Join(append([]string{real}, comps[i:]...)...), rel, nil
}

// Every file method (ReadFile, WriteFile, EditFile, ListDir, Stat, Remove,
// MakeDir, Glob, Grep) goes through l.ws, an os.Root on the workspace opened
// once in New: the lexically cleaned path (cleanRel) is resolved by the
// kernel one component at a time from the root's file descriptor (openat
// with O_NOFOLLOW, symlinks read and followed by os.Root itself), in the same
// walk that performs the operation. There is no check to race with: a
// directory swapped for a symlink between two calls, or during one, is seen
// as a symlink and followed only if it stays inside the root; otherwise the
// call fails with ErrPermission. The rules that follow from os.Root:
//
//   - a relative symlink whose target stays inside the workspace works (read,
//     write, list and stat follow it; Remove removes the link itself);
//   - an absolute symlink is refused even when it points inside the
//     workspace (os.Root never follows one), as is one climbing out with "..";
//   - a dangling symlink inside the workspace may be written through (the
//     target is created, inside); one pointing outside is refused;
//   - a regular file with more than one hard link is neither read nor
//     written (nor grepped): a same-user command can hard-link a file from
//     outside the workspace into it (`ln /outside/secret ws/x`), and a hard
//     link cannot be told from the original (singleLink).
//
// resolve (above) remains for Exec's working directory only: a command runs
// as the same user as the sandbox and can cd anywhere, so its starting
// directory is no boundary.

// errPathEscapes is the text of os.Root's unexported escape error.
const errPathEscapes = "path escapes from parent"

// escapes reports whether err is os.Root's "path escapes" error.
func escapes(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == errPathEscapes {
			return true
		}
	}
	return false
}

// rootError is pathError for an error from os.Root: an escape is
// ErrPermission.
func (l *Sandbox) rootError(op, rel string, err error) error {
	if escapes(err) {
		return fmt.Errorf("%s: path %q resolves outside the workspace: %w", op, rel, contracts.ErrPermission)
	}
	return l.pathError(op, rel, err)
}

// isNotDir reports whether err is ENOTDIR, or os.Root.OpenRoot's own
// "not a directory" error (opening a root on a file), which is no errno.
func isNotDir(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e == syscall.ENOTDIR || e.Error() == syscall.ENOTDIR.Error() {
			return true
		}
	}
	return false
}

// singleLink refuses a regular file with more than one hard link: it may be
// a link to a file outside the workspace, which no path check can detect.
func singleLink(op, rel string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() || uint64(st.Nlink) <= 1 {
		return nil
	}
	return fmt.Errorf("%s %s: the file has %d hard links, and a hard link may be a file outside the workspace; refusing (copy it to a new file to use it): %w",
		op, rel, st.Nlink, contracts.ErrPermission)
}

// pathError translates an os error about workspace path rel into a sentinel
// error whose message names rel (never the host path).
func (l *Sandbox) pathError(op, rel string, err error) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: no such file or directory: %w", op, rel, contracts.ErrNotFound)
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		return fmt.Errorf("%s %s: a parent is not a directory: %w", op, rel, contracts.ErrNotFound)
	case errors.As(err, &errno) && errno == syscall.ELOOP:
		return fmt.Errorf("%s %s: too many levels of symlinks: %w", op, rel, contracts.ErrInvalid)
	case errors.As(err, &errno) && errno == syscall.EISDIR:
		return fmt.Errorf("%s %s: is a directory: %w", op, rel, contracts.ErrInvalid)
	case errors.As(err, &errno) && errno == syscall.ENOTEMPTY:
		return fmt.Errorf("%s %s: directory not empty (remove it recursively): %w", op, rel, contracts.ErrInvalid)
	case errors.As(err, &errno) && errno == syscall.EEXIST:
		return fmt.Errorf("%s %s: already exists: %w", op, rel, contracts.ErrExists)
	case errors.As(err, &errno) && errno == syscall.ENAMETOOLONG:
		return fmt.Errorf("%s %s: name too long: %w", op, rel, contracts.ErrInvalid)
	case errors.As(err, &errno) && (errno == syscall.EACCES || errno == syscall.EPERM):
		return fmt.Errorf("%s %s: access denied: %w", op, rel, contracts.ErrPermission)
	case strings.Contains(err.Error(), "too many links"): // filepath.EvalSymlinks
		return fmt.Errorf("%s %s: too many levels of symlinks: %w", op, rel, contracts.ErrInvalid)
	}
	// Anything else is an infrastructure failure; keep the host path out of
	// the message.
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", op, rel, err)
}
