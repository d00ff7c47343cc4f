package server

import (
	"fmt"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// MaxImport bounds a workspace stream: the snapshot limit on file contents
// plus room for tar headers.
const MaxImport = snapshot.DefaultMaxBytes + 256<<20

// export streams the workspace (local.Sandbox.WriteExport). An error before
// the first byte is a protocol error; after it, the connection is cut, so
// the client sees a stream without its manifest and stores nothing.
func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	var req proto.ExportRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, r, "workspace export", err)
		return
	}
	cw := &counting{w: w}
	w.Header().Set("Content-Type", proto.ContentTypeTar)
	if err := s.sb.WriteExport(r.Context(), req.Have, req.Since, cw); err != nil {
		if cw.n == 0 {
			w.Header().Del("Content-Type")
			s.fail(w, r, "workspace export", err)
			return
		}
		s.log.ErrorContext(r.Context(), "sandboxd: workspace export failed mid-stream", "error", err)
		panic(http.ErrAbortHandler)
	}
}

// importWorkspace writes a workspace stream into the workspace.
func (s *Server) importWorkspace(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != proto.ContentTypeTar {
		s.fail(w, r, "workspace import", fmt.Errorf("content type %.100q: want %s: %w", ct, proto.ContentTypeTar, contracts.ErrInvalid))
		return
	}
	body := http.MaxBytesReader(raw(w), r.Body, MaxImport)
	n, err := s.sb.ImportWorkspace(r.Context(), body)
	if err != nil {
		s.fail(w, r, "workspace import", err)
		return
	}
	writeJSON(w, proto.ImportResult{Entries: n})
}

// counting counts the bytes written through it.
type counting struct {
	w http.ResponseWriter
	n int64
}

func (c *counting) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
