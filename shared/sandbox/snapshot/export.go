package snapshot

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Cache remembers each file's chunk hashes by its identity (inode, size,
// modification and change times), so an export reads only files that
// changed since the last one. The zero value is ready; it is safe for
// concurrent use.
type Cache struct {
	mu    sync.Mutex
	files map[string]cached
}

type cached struct {
	id     identity
	chunks []string
}

func (c *Cache) get(p string, id identity) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.files[p]
	return e.chunks, ok && e.id == id && id.known
}

// replace makes files the whole cache: what the last export saw.
func (c *Cache) replace(files map[string]cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files = files
}

// errSkip: the entry is left out (it changed into something a snapshot
// does not keep while the workspace was walked).
var errSkip = errors.New("left out")

// Export writes the workspace under root as an export stream to w: a
// "chunk/<sha>" tar entry for every chunk have does not report (each once),
// then "manifest.json" — or, when no chunk was sent and the manifest's id is
// since (the caller's latest snapshot), only an "unchanged" entry, so an
// unchanged workspace costs a walk and no transfer. It fails with
// ErrTooLarge when the workspace is over lim, before writing anything.
func Export(ctx context.Context, root *os.Root, have func(sum string) bool, since string, cache *Cache, lim Limits, w io.Writer) error {
	lim = lim.withDefaults()
	if err := measure(ctx, root, lim); err != nil {
		return err // before a byte is written: the caller can still answer with the error
	}
	tw := tar.NewWriter(w)
	sent := map[string]bool{}
	seen := map[string]cached{} // the cache after this export: removed files drop out
	m := Manifest{Version: ManifestVersion, Entries: []Entry{}}
	var total int64
	buf := make([]byte, ChunkSize)
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return fmt.Errorf("snapshot: reading the workspace: %w", err)
			}
			m.Skipped++ // vanished or unreadable meanwhile
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if len(p) > MaxPath {
			m.Skipped++
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if len(m.Entries) >= lim.MaxEntries {
			return fmt.Errorf("snapshot: the workspace holds more than %d entries (the snapshot limit): %w", lim.MaxEntries, contracts.ErrTooLarge)
		}
		fi, err := root.Lstat(p)
		if err != nil {
			m.Skipped++
			return nil
		}
		e := Entry{Mode: uint32(fi.Mode().Perm()), ModTime: mtime(fi.ModTime())}
		e.setPath(p)
		switch {
		case fi.IsDir():
			e.Type = TypeDir
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(p)
			if err != nil {
				m.Skipped++
				return nil
			}
			e.setTarget(target)
			e.Type, e.ModTime = TypeSymlink, time.Time{}
		case fi.Mode().IsRegular() && keepLinks(fi, lim):
			e.Type = TypeFile
			c, ok := cache.get(p, identityOf(fi))
			if ok && all(c, have, sent) {
				e.Chunks, e.Size = c, fi.Size()
				seen[p] = cached{id: identityOf(fi), chunks: c}
			} else {
				var id identity
				e.Chunks, e.Size, id, err = exportFile(root, p, buf, have, sent, lim, tw)
				if errors.Is(err, errSkip) {
					m.Skipped++
					return nil
				}
				if err != nil {
					return err
				}
				if id.known {
					seen[p] = cached{id: id, chunks: e.Chunks}
				}
			}
			if total += e.Size; total > lim.MaxBytes {
				return fmt.Errorf("snapshot: the workspace holds more than %d MiB of files (the snapshot limit): %w", lim.MaxBytes>>20, contracts.ErrTooLarge)
			}
		default: // a socket, fifo or device; another user's hard-linked file
			m.Skipped++
			return nil
		}
		m.Entries = append(m.Entries, e)
		return nil
	})
	if err != nil {
		return err
	}
	cache.replace(seen)
	b, id := m.Encode()
	name := manifestName
	if len(sent) == 0 && since != "" && id == since {
		name, b = unchangedName, []byte(id)
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(b); err != nil {
		return err
	}
	return tw.Close()
}

// keepLinks: a file with one link, or one of the commands' user.
func keepLinks(fi fs.FileInfo, lim Limits) bool {
	return links(fi) <= 1 || owner(fi) == lim.LinkOwner
}

// measure refuses a workspace over lim from its metadata alone.
func measure(ctx context.Context, root *os.Root, lim Limits) error {
	var entries int
	var total, paths int64
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil // Export reports it
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(p) > MaxPath {
			if d.IsDir() {
				return fs.SkipDir // left out, with what it holds
			}
			return nil
		}
		if paths += int64(len(p)); paths > MaxPathBytes {
			return fmt.Errorf("snapshot: the workspace's paths add up to more than %d MiB (the snapshot limit; deep trees of long names): %w", MaxPathBytes>>20, contracts.ErrTooLarge)
		}
		if entries++; entries > lim.MaxEntries {
			return fmt.Errorf("snapshot: the workspace holds more than %d entries (the snapshot limit): %w", lim.MaxEntries, contracts.ErrTooLarge)
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				if total += fi.Size(); total > lim.MaxBytes {
					return fmt.Errorf("snapshot: the workspace holds more than %d MiB of files (the snapshot limit): %w", lim.MaxBytes>>20, contracts.ErrTooLarge)
				}
			}
		}
		return nil
	})
}

// all reports whether every chunk is had (by the caller or sent already).
func all(chunks []string, have func(string) bool, sent map[string]bool) bool {
	for _, c := range chunks {
		if !sent[c] && !have(c) {
			return false
		}
	}
	return true
}

// exportFile reads the file chunk by chunk, sending every chunk not had,
// and returns its chunks, size and identity as opened. A file that is no
// longer one a snapshot keeps is errSkip.
func exportFile(root *os.Root, p string, buf []byte, have func(string) bool, sent map[string]bool, lim Limits, tw *tar.Writer) ([]string, int64, identity, error) {
	// Non-blocking, and checked after the open: a file swapped for a fifo
	// since the walk saw it must not block the export.
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, identity{}, errSkip
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || !keepLinks(fi, lim) {
		return nil, 0, identity{}, errSkip
	}
	var sums []string
	var size int64
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			sum := HashHex(buf[:n])
			sums = append(sums, sum)
			size += int64(n)
			if !sent[sum] && !have(sum) {
				if err := tw.WriteHeader(&tar.Header{Name: chunkPrefix + sum, Mode: 0o600, Size: int64(n), Typeflag: tar.TypeReg}); err != nil {
					return nil, 0, identity{}, err
				}
				if _, err := tw.Write(buf[:n]); err != nil {
					return nil, 0, identity{}, err
				}
				sent[sum] = true
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return sums, size, identityOf(fi), nil
		}
		if err != nil {
			return nil, 0, identity{}, fmt.Errorf("snapshot: reading %s: %w", p, err)
		}
	}
}
