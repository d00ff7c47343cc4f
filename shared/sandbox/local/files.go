package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/cairnrun/cairn/shared/contracts"
)

// openRegular opens workspace path rel through the root with flag (plus
// O_NONBLOCK, so a FIFO never blocks the call; it is then refused as not a
// regular file) and checks that it is a regular file with a single link.
// os.Root opens the last component with O_NOFOLLOW and follows a symlink
// there only within the workspace.
func (l *Sandbox) openRegular(op, rel string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := l.ws.OpenFile(rel, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) { // a FIFO without a reader, opened to write
			return nil, nil, fmt.Errorf("%s %s: not a regular file: %w", op, rel, contracts.ErrInvalid)
		}
		return nil, nil, l.rootError(op, rel, err)
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
	if err := singleLink(op, rel, fi); err != nil {
		f.Close()
		return nil, nil, err
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
	rel, err := cleanRel(r.Path)
	if err != nil {
		return contracts.ReadFileResult{}, err
	}
	f, fi, err := l.openRegular("reading", rel, os.O_RDONLY, 0)
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
	rel, err := cleanRel(r.Path)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("writing %s: is a directory: %w", rel, contracts.ErrInvalid)
	}
	// Parents are created through the root too; the open below resolves
	// the path again from the root, so a parent swapped meanwhile is
	// confined all the same.
	if dir := path.Dir(rel); dir != "." {
		if err := l.ws.MkdirAll(dir, 0o755); err != nil {
			return l.rootError("writing", rel, err)
		}
	}
	flags := os.O_WRONLY | os.O_CREATE
	if r.Append {
		flags |= os.O_APPEND
	}
	// No O_TRUNC: the file is truncated only once it is known to be a
	// regular file with a single link. Writes are in place (no temporary
	// file and rename), on the descriptor just opened.
	f, _, err := l.openRegular("writing", rel, flags, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if !r.Append {
		if err := f.Truncate(0); err != nil {
			return l.pathError("writing", rel, err)
		}
	}
	if _, err := f.WriteString(r.Content); err != nil {
		return l.pathError("writing", rel, err)
	}
	if err := f.Close(); err != nil {
		return l.pathError("writing", rel, err)
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
	rel, err := cleanRel(r.Path)
	if err != nil {
		return contracts.EditFileResult{}, err
	}
	// One descriptor for the read and the write: the path is resolved once.
	f, fi, err := l.openRegular("editing", rel, os.O_RDWR, 0)
	if err != nil {
		return contracts.EditFileResult{}, err
	}
	defer f.Close()
	if fi.Size() > l.opts.MaxWrite {
		return contracts.EditFileResult{}, fmt.Errorf("editing %s: file of %d bytes exceeds the %d-byte limit: %w", rel, fi.Size(), l.opts.MaxWrite, contracts.ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, l.opts.MaxWrite+1))
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
	if err := f.Truncate(0); err != nil {
		return contracts.EditFileResult{}, l.pathError("editing", rel, err)
	}
	if _, err := f.WriteAt([]byte(text), 0); err != nil {
		return contracts.EditFileResult{}, l.pathError("editing", rel, err)
	}
	if err := f.Close(); err != nil {
		return contracts.EditFileResult{}, l.pathError("editing", rel, err)
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
// symlink is reported as a symlink (Mode has fs.ModeSymlink). The directory
// is opened once through the root and its entries are described relative to
// that descriptor.
func (l *Sandbox) ListDir(ctx context.Context, p string) ([]contracts.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rel, err := cleanRel(p)
	if err != nil {
		return nil, err
	}
	dir, err := l.ws.OpenRoot(rel)
	if err != nil {
		if !escapes(err) && isNotDir(err) {
			fi, serr := l.ws.Stat(rel)
			if serr == nil && !fi.IsDir() {
				return nil, fmt.Errorf("listing %s: not a directory: %w", rel, contracts.ErrInvalid)
			}
			if serr != nil {
				err = serr // ENOTDIR from a parent: ErrNotFound
			}
		}
		return nil, l.rootError("listing", rel, err)
	}
	defer dir.Close()
	entries, err := readDir(dir)
	if err != nil {
		return nil, l.pathError("listing", rel, err)
	}
	out := make([]contracts.FileInfo, 0, len(entries))
	for _, e := range entries {
		efi, err := dir.Lstat(e.Name())
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, info(path.Join(rel, e.Name()), efi))
	}
	return out, nil
}

// readDir lists the directory dir is opened on, sorted by name.
func readDir(dir *os.Root) ([]fs.DirEntry, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// Stat describes a file or directory (symlinks followed, confined).
func (l *Sandbox) Stat(ctx context.Context, p string) (contracts.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return contracts.FileInfo{}, err
	}
	rel, err := cleanRel(p)
	if err != nil {
		return contracts.FileInfo{}, err
	}
	fi, err := l.ws.Stat(rel)
	if err != nil {
		return contracts.FileInfo{}, l.rootError("stat", rel, err)
	}
	return info(rel, fi), nil
}

// Remove deletes a file, a symlink (never its target) or a directory (a
// non-empty one only when recursive). The workspace root is never removed.
// The parents are resolved through the root and the last component is
// removed relative to its parent's descriptor (unlinkat), never followed.
func (l *Sandbox) Remove(ctx context.Context, p string, recursive bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rel, err := cleanRel(p)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("removing %s: refusing to remove the workspace root: %w", rel, contracts.ErrPermission)
	}
	if _, err := l.ws.Lstat(rel); err != nil {
		return l.rootError("removing", rel, err)
	}
	if recursive {
		err = l.ws.RemoveAll(rel)
	} else {
		err = l.ws.Remove(rel)
	}
	if err != nil {
		return l.rootError("removing", rel, err)
	}
	return nil
}

// MakeDir creates a directory and its parents; an existing directory is
// fine, an existing file is ErrExists.
func (l *Sandbox) MakeDir(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rel, err := cleanRel(p)
	if err != nil {
		return err
	}
	if err := l.ws.MkdirAll(rel, 0o755); err != nil {
		if !escapes(err) && isNotDir(err) {
			return fmt.Errorf("making directory %s: a file is in the way: %w", rel, contracts.ErrExists)
		}
		return l.rootError("making directory", rel, err)
	}
	return nil
}
