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
// with every symlink resolved. It returns the cleaned relative path too.
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

// resolveParent resolves everything but the last component of p, which is
// returned unresolved: for operations on a directory entry itself (Remove
// deletes a symlink, never its target).
func (l *Sandbox) resolveParent(p string) (host, rel string, err error) {
	rel, err = cleanRel(p)
	if err != nil {
		return "", "", err
	}
	if rel == "." {
		return "", "", fmt.Errorf("refusing to operate on the workspace root: %w", contracts.ErrPermission)
	}
	dir, base := path.Split(rel)
	parent, _, err := l.resolve(dir)
	if err != nil {
		return "", "", err
	}
	return filepath.Join(parent, base), rel, nil
}

// relOf maps a host path inside the root back to a workspace-relative path.
func (l *Sandbox) relOf(host string) string {
	r, err := filepath.Rel(l.root, host)
	if err != nil {
		return host
	}
	return filepath.ToSlash(r)
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
