package local

import (
	"context"
	"io"
	"os"

	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// WriteExport writes the workspace's export stream to w (snapshot.Export):
// the chunks not in have, then the manifest (or "unchanged" when it is
// still snapshot since). A workspace over the snapshot limits fails with
// ErrTooLarge before anything is written.
func (s *Sandbox) WriteExport(ctx context.Context, have []string, since string, w io.Writer) error {
	set := make(map[string]bool, len(have))
	for _, h := range have {
		set[h] = true
	}
	// Hard-linked files are kept when the commands' user owns them (it could
	// read them anyway); another user's are left out.
	lim := snapshot.Limits{LinkOwner: os.Geteuid()}
	if c := s.opts.Credential; c != nil {
		lim.LinkOwner = int(c.Uid)
	}
	return snapshot.Export(ctx, s.ws, func(sum string) bool { return set[sum] }, since, &s.snaps, lim, w)
}

// ExportWorkspace is WriteExport as a snapshot.Source: read is given the
// stream. An export error is returned in preference to read's.
func (s *Sandbox) ExportWorkspace(ctx context.Context, have []string, since string, read func(io.Reader) error) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := s.WriteExport(ctx, have, since, pw)
		pw.CloseWithError(err)
		done <- err
	}()
	rerr := read(pr)
	pr.CloseWithError(io.ErrClosedPipe) // a reader that stopped early unblocks the export
	if err := <-done; err != nil && err != io.ErrClosedPipe {
		return err
	}
	return rerr
}

// ImportWorkspace writes a workspace stream (snapshot.Import) into the
// workspace; with Options.Credential every entry is given to the commands'
// user, never following a symlink.
func (s *Sandbox) ImportWorkspace(ctx context.Context, r io.Reader) (int, error) {
	var own func(string) error
	if c := s.opts.Credential; c != nil {
		own = func(name string) error { return s.ws.Lchown(name, int(c.Uid), int(c.Gid)) }
	}
	return snapshot.Import(ctx, s.ws, r, own)
}
