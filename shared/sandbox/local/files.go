package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Files are opened with O_NOFOLLOW (the resolved path has no symlinks left,
// so a symlink appearing at the final component after resolution is a race
// and fails) and O_NONBLOCK (so a FIFO never blocks the call; it is then
// refused as not a regular file).
const (
	readFlags  = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	writeFlags = os.O_WRONLY | os.O_CREATE | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
)

// openRegular opens host for reading and checks it is a regular file.
func (l *Sandbox) openRegular(op, host, rel string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(host, readFlags, 0)
	if err != nil {
		return nil, nil, l.pathError(op, rel, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, l.pathError(op, rel, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%s %s: is a directory: %w", op, rel, contracts.ErrInvalid)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s %s: not a regular file: %w", op, rel, contracts.ErrInvalid)
	}
	return f, fi, nil
}

// ReadFile reads up to Limit bytes (0 or more than ReadCap = ReadCap) from
// Offset. Truncated is set when the file continues past what was returned.
func (l *Sandbox) ReadFile(ctx context.Context, r contracts.ReadFileRequest) (contracts.ReadFileResult, error) {
	if err := ctx.Err(); err != nil {
		return contracts.ReadFileResult{}, err
	}
	if r.Offset < 0 || r.Limit < 0 {
		return contracts.ReadFileResult{}, fmt.Errorf("reading %s: negative offset or limit: %w", r.Path, contracts.ErrInvalid)
	}
	host, rel, err := l.resolve(r.Path)
	if err != nil {
		return contracts.ReadFileResult{}, err
	}
	f, fi, err := l.openRegular("reading", host, rel)
	if err != nil {
		return contracts.ReadFileResult{}, err
	}
	defer f.Close()
	limit := r.Limit
	if limit == 0 || limit > l.opts.ReadCap {
		limit = l.opts.ReadCap
	}
	size := fi.Size()
	if r.Offset >= size {
		return contracts.ReadFileResult{Size: size}, nil
	}
	buf := make([]byte, min(limit, size-r.Offset))
	n, err := f.ReadAt(buf, r.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return contracts.ReadFileResult{}, l.pathError("reading", rel, err)
	}
	return contracts.ReadFileResult{
		Content:   string(buf[:n]),
		Size:      size,
		Truncated: r.Offset+int64(n) < size,
	}, nil
}

// writeFile creates or replaces (or appends to) a file, creating parents.
func (l *Sandbox) writeFile(ctx context.Context, r contracts.WriteFileRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.Path == "" {
		return fmt.Errorf("writing: empty path: %w", contracts.ErrInvalid)
	}
	if int64(len(r.Content)) > l.opts.MaxWrite {
		return fmt.Errorf("writing %s: %d bytes exceed the %d-byte limit: %w", r.Path, len(r.Content), l.opts.MaxWrite, contracts.ErrTooLarge)
	}
	host, rel, err := l.resolve(r.Path)
	if err != nil {
		return err
	}
	if host == l.root {
		return fmt.Errorf("writing %s: is a directory: %w", rel, contracts.ErrInvalid)
	}
	return l.writeHost("writing", host, rel, []byte(r.Content), r.Append)
}

// writeHost writes data to a resolved host path (parents created).
func (l *Sandbox) writeHost(op, host, rel string, data []byte, appendMode bool) error {
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		return l.pathError(op, rel, err)
	}
	flags := writeFlags
	if appendMode {
		flags |= os.O_APPEND
	}
	f, err := os.OpenFile(host, flags, 0o644)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			return fmt.Errorf("%s %s: not a regular file: %w", op, rel, contracts.ErrInvalid)
		}
		return l.pathError(op, rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return l.pathError(op, rel, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %s: not a regular file: %w", op, rel, contracts.ErrInvalid)
	}
	if !appendMode {
		if err := f.Truncate(0); err != nil {
			return l.pathError(op, rel, err)
		}
	}
	if _, err := f.Write(data); err != nil {
		return l.pathError(op, rel, err)
	}
	if err := f.Close(); err != nil {
		return l.pathError(op, rel, err)
	}
	return nil
}

// editFile replaces Old with New; Old must occur exactly once unless All.
func (l *Sandbox) editFile(ctx context.Context, r contracts.EditFileRequest) (contracts.EditFileResult, error) {
	if err := ctx.Err(); err != nil {
		return contracts.EditFileResult{}, err
	}
	if r.Path == "" {
		return contracts.EditFileResult{}, fmt.Errorf("editing: empty path: %w", contracts.ErrInvalid)
	}
	if r.Old == "" {
		return contracts.EditFileResult{}, fmt.Errorf("editing %s: empty old string: %w", r.Path, contracts.ErrInvalid)
	}
	host, rel, err := l.resolve(r.Path)
	if err != nil {
		return contracts.EditFileResult{}, err
	}
	f, fi, err := l.openRegular("editing", host, rel)
	if err != nil {
		return contracts.EditFileResult{}, err
	}
	if fi.Size() > l.opts.MaxWrite {
		f.Close()
		return contracts.EditFileResult{}, fmt.Errorf("editing %s: file of %d bytes exceeds the %d-byte limit: %w", rel, fi.Size(), l.opts.MaxWrite, contracts.ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, l.opts.MaxWrite+1))
	f.Close()
	if err != nil {
		return contracts.EditFileResult{}, l.pathError("editing", rel, err)
	}
	text := string(data)
	n := strings.Count(text, r.Old)
	switch {
	case n == 0:
		return contracts.EditFileResult{}, fmt.Errorf("editing %s: old string not found: %w", rel, contracts.ErrInvalid)
	case n > 1 && !r.All:
		return contracts.EditFileResult{}, fmt.Errorf("editing %s: old string occurs %d times; make it unique or replace all: %w", rel, n, contracts.ErrInvalid)
	}
	if r.All {
		text = strings.ReplaceAll(text, r.Old, r.New)
	} else {
		text = strings.Replace(text, r.Old, r.New, 1)
	}
	if int64(len(text)) > l.opts.MaxWrite {
		return contracts.EditFileResult{}, fmt.Errorf("editing %s: result of %d bytes exceeds the %d-byte limit: %w", rel, len(text), l.opts.MaxWrite, contracts.ErrTooLarge)
	}
	if err := l.writeHost("editing", host, rel, []byte(text), false); err != nil {
		return contracts.EditFileResult{}, err
	}
	return contracts.EditFileResult{Replacements: n}, nil
}

// info converts host file info to a FileInfo named by workspace path rel.
func info(rel string, fi fs.FileInfo) contracts.FileInfo {
	return contracts.FileInfo{
		Path:    rel,
		Size:    fi.Size(),
		IsDir:   fi.IsDir(),
		Mode:    uint32(fi.Mode()),
		ModTime: fi.ModTime(),
	}
}

// ListDir lists a directory sorted by name. Entries are not followed: a
// symlink is reported as a symlink (Mode has fs.ModeSymlink).
func (l *Sandbox) ListDir(ctx context.Context, p string) ([]contracts.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host, rel, err := l.resolve(p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(host)
	if err != nil {
		return nil, l.pathError("listing", rel, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("listing %s: not a directory: %w", rel, contracts.ErrInvalid)
	}
	entries, err := os.ReadDir(host)
	if err != nil {
		return nil, l.pathError("listing", rel, err)
	}
	out := make([]contracts.FileInfo, 0, len(entries))
	for _, e := range entries {
		efi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, info(path.Join(rel, e.Name()), efi))
	}
	return out, nil
}

// Stat describes a file or directory (symlinks followed, confined).
func (l *Sandbox) Stat(ctx context.Context, p string) (contracts.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return contracts.FileInfo{}, err
	}
	host, rel, err := l.resolve(p)
	if err != nil {
		return contracts.FileInfo{}, err
	}
	fi, err := os.Stat(host)
	if err != nil {
		return contracts.FileInfo{}, l.pathError("stat", rel, err)
	}
	return info(rel, fi), nil
}

// Remove deletes a file, a symlink (never its target) or a directory (a
// non-empty one only when recursive). The workspace root is never removed.
func (l *Sandbox) Remove(ctx context.Context, p string, recursive bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	host, rel, err := l.resolveParent(p)
	if err != nil {
		return err
	}
	if host == l.root || !within(l.root, host) {
		return fmt.Errorf("removing %s: refusing to remove the workspace root: %w", rel, contracts.ErrPermission)
	}
	if _, err := os.Lstat(host); err != nil {
		return l.pathError("removing", rel, err)
	}
	if recursive {
		err = os.RemoveAll(host)
	} else {
		err = os.Remove(host)
	}
	if err != nil {
		return l.pathError("removing", rel, err)
	}
	return nil
}

// MakeDir creates a directory and its parents; an existing directory is
// fine, an existing file is ErrExists.
func (l *Sandbox) MakeDir(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	host, rel, err := l.resolve(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(host, 0o755); err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && errno == syscall.ENOTDIR {
			return fmt.Errorf("making directory %s: a file is in the way: %w", rel, contracts.ErrExists)
		}
		return l.pathError("making directory", rel, err)
	}
	return nil
}
