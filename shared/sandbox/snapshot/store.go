package snapshot

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Source is a sandbox that exports its workspace: it calls read with the
// export stream (Export's), sending only chunks not in have, and no
// manifest if it is still since's.
type Source interface {
	ExportWorkspace(ctx context.Context, have []string, since string, read func(io.Reader) error) error
}

// Sink is a sandbox that imports a workspace stream (Import's).
type Sink interface {
	ImportWorkspace(ctx context.Context, r io.Reader) (int, error)
}

// manifestCacheSize bounds the manifests a Store keeps in memory.
const manifestCacheSize = 64

// maxManifest bounds a manifest's JSON (100,000 entries of long paths).
const maxManifest = 64 << 20

// Store keeps workspace snapshots in a blob store. It is safe for
// concurrent use.
type Store struct {
	Blobs contracts.BlobStore
	// Now stamps snapshots (default time.Now).
	Now func() time.Time

	mu        sync.Mutex
	manifests map[string]Manifest // by session/id; a small cache
}

// Save takes a snapshot of src's workspace, storing only the chunks prev
// (the session's latest snapshot, nil for none) does not hold. It returns
// prev itself when nothing changed. Every chunk received is checked against
// its name and every chunk the manifest names must be held: a stream that
// does not add up stores no manifest.
func (s *Store) Save(ctx context.Context, src Source, sessionID string, prev *contracts.WorkspaceSnapshot) (*contracts.WorkspaceSnapshot, error) {
	held := map[string]int64{} // chunk → its length
	if prev != nil {
		pm, err := s.manifest(ctx, sessionID, prev.ID)
		if err != nil {
			return nil, err
		}
		for _, e := range pm.Entries {
			for i, c := range e.Chunks {
				held[c] = ChunkLen(e.Size, i)
			}
		}
	}
	have := make([]string, 0, len(held))
	for c := range held {
		have = append(have, c)
	}
	since := ""
	if prev != nil {
		since = prev.ID
	}
	var m *Manifest
	err := src.ExportWorkspace(ctx, have, since, func(r io.Reader) error {
		got, err := s.receive(ctx, sessionID, r, held, since)
		m = got
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("snapshotting workspace of session %s: %w", sessionID, err)
	}
	if m == nil { // unchanged since prev
		return prev, nil
	}
	b, id := m.Encode()
	if prev != nil && id == prev.ID {
		return prev, nil
	}
	if err := s.Blobs.PutBlob(ctx, ManifestKey(sessionID, id), b); err != nil {
		return nil, fmt.Errorf("snapshotting workspace of session %s: %w", sessionID, err)
	}
	s.remember(sessionID, id, *m)
	files, bytes := m.Totals()
	return &contracts.WorkspaceSnapshot{ID: id, At: s.now().UTC(), Files: files, Bytes: bytes, Skipped: m.Skipped}, nil
}

// receive stores the chunks of an export stream and returns its manifest,
// checked: every chunk it names is in held or was received, and it is
// within the default Limits (a sandbox streaming without end is cut off).
// nil, nil: the stream says the workspace is still snapshot since.
func (s *Store) receive(ctx context.Context, sessionID string, r io.Reader, held map[string]int64, since string) (*Manifest, error) {
	tr := tar.NewReader(r)
	got := map[string]int64{} // chunk → its length
	lim := Limits{}.withDefaults()
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("the export stream ended without a manifest: %w", contracts.ErrUnavailable)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the export stream: %v: %w", err, contracts.ErrUnavailable)
		}
		if h.Name == unchangedName {
			id, err := io.ReadAll(io.LimitReader(tr, 128))
			if err != nil || since == "" || string(id) != since || len(got) > 0 {
				return nil, fmt.Errorf("the export stream says unchanged since %.80q (the latest snapshot is %q): %w", id, since, contracts.ErrInvalid)
			}
			return nil, nil
		}
		if h.Name == manifestName {
			var m Manifest
			if err := json.NewDecoder(io.LimitReader(tr, maxManifest)).Decode(&m); err != nil {
				return nil, fmt.Errorf("decoding the snapshot manifest: %v: %w", err, contracts.ErrInvalid)
			}
			if err := m.Check(); err != nil {
				return nil, err
			}
			if files, bytes := m.Totals(); len(m.Entries) > lim.MaxEntries || bytes > lim.MaxBytes {
				return nil, fmt.Errorf("the snapshot manifest lists %d entries, %d files of %d bytes, over the snapshot limits: %w", len(m.Entries), files, bytes, contracts.ErrTooLarge)
			}
			for _, e := range m.Entries {
				for i, c := range e.Chunks {
					n, ok := got[c]
					if !ok {
						n, ok = held[c]
					}
					if !ok {
						return nil, fmt.Errorf("the snapshot manifest names chunk %s of %.200q, which was not sent: %w", c, e.Name(), contracts.ErrInvalid)
					}
					if want := ChunkLen(e.Size, i); n != want {
						return nil, fmt.Errorf("the snapshot manifest puts chunk %s (%d bytes) at %d of %.200q (%d bytes), where %d bytes belong: %w", c, n, i, e.Name(), e.Size, want, contracts.ErrInvalid)
					}
				}
			}
			return &m, nil
		}
		sum, ok := strings.CutPrefix(h.Name, chunkPrefix)
		if !ok || !isHash(sum) || h.Size > ChunkSize {
			return nil, fmt.Errorf("unexpected entry %.100q (%d bytes) in the export stream: %w", h.Name, h.Size, contracts.ErrInvalid)
		}
		data, err := io.ReadAll(io.LimitReader(tr, ChunkSize))
		if err != nil {
			return nil, fmt.Errorf("reading chunk %s: %v: %w", sum, err, contracts.ErrUnavailable)
		}
		if HashHex(data) != sum {
			return nil, fmt.Errorf("chunk %s does not hash to its name: %w", sum, contracts.ErrInvalid)
		}
		if total += int64(len(data)); total > lim.MaxBytes {
			return nil, fmt.Errorf("the export stream sent more than %d MiB of chunks, over the snapshot limit: %w", lim.MaxBytes>>20, contracts.ErrTooLarge)
		}
		if err := s.Blobs.PutBlob(ctx, ChunkKey(sessionID, sum), data); err != nil {
			return nil, err
		}
		got[sum] = int64(len(data))
	}
}

// Restore writes snapshot snap of the session into dst, which should be an
// empty workspace, and returns how many entries it wrote.
func (s *Store) Restore(ctx context.Context, dst Sink, sessionID string, snap contracts.WorkspaceSnapshot) (int, error) {
	m, err := s.manifest(ctx, sessionID, snap.ID)
	if err != nil {
		return 0, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.stream(ctx, sessionID, m, pw)) }()
	n, err := dst.ImportWorkspace(ctx, pr)
	pr.CloseWithError(errors.New("restore ended")) // unblocks the writer if the sink stopped early
	if err != nil {
		return n, fmt.Errorf("restoring snapshot %s of session %s: %w", snap.ID, sessionID, err)
	}
	return n, nil
}

// stream writes the manifest's workspace as a plain tar to w, each file's
// content from its chunks (each checked against its hash).
func (s *Store) stream(ctx context.Context, sessionID string, m Manifest, w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, e := range m.Entries {
		h := &tar.Header{Name: e.Name(), Mode: int64(e.Mode), ModTime: e.ModTime, Format: tar.FormatPAX}
		switch e.Type {
		case TypeDir:
			h.Typeflag = tar.TypeDir
		case TypeSymlink:
			h.Typeflag, h.Linkname, h.ModTime = tar.TypeSymlink, e.LinkTarget(), time.Time{}
		default:
			h.Typeflag, h.Size = tar.TypeReg, e.Size
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		for _, c := range e.Chunks {
			data, err := s.Blobs.GetBlob(ctx, ChunkKey(sessionID, c))
			if err != nil {
				return fmt.Errorf("chunk %s of %.200q: %w", c, e.Name(), err)
			}
			if HashHex(data) != c {
				return fmt.Errorf("chunk %s of %.200q does not hash to its name: %w", c, e.Name(), contracts.ErrInvalid)
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// manifest reads (and caches) the manifest of snapshot id.
func (s *Store) manifest(ctx context.Context, sessionID, id string) (Manifest, error) {
	s.mu.Lock()
	m, ok := s.manifests[sessionID+"/"+id]
	s.mu.Unlock()
	if ok {
		return m, nil
	}
	b, err := s.Blobs.GetBlob(ctx, ManifestKey(sessionID, id))
	if err != nil {
		return Manifest{}, fmt.Errorf("reading snapshot %s of session %s: %w", id, sessionID, err)
	}
	if HashHex(b) != id {
		return Manifest{}, fmt.Errorf("snapshot %s of session %s does not hash to its id: %w", id, sessionID, contracts.ErrInvalid)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("decoding snapshot %s of session %s: %v: %w", id, sessionID, err, contracts.ErrInvalid)
	}
	if err := m.Check(); err != nil {
		return Manifest{}, err
	}
	s.remember(sessionID, id, m)
	return m, nil
}

func (s *Store) remember(sessionID, id string, m Manifest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.manifests == nil || len(s.manifests) >= manifestCacheSize {
		s.manifests = map[string]Manifest{} // crude but bounded: refilled on demand
	}
	s.manifests[sessionID+"/"+id] = m
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
