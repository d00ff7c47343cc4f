package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// WorkspaceTimeout bounds one workspace export or import (a snapshot of up
// to snapshot.DefaultMaxBytes).
const WorkspaceTimeout = 10 * time.Minute

var (
	_ snapshot.Source = (*Client)(nil)
	_ snapshot.Sink   = (*Client)(nil)
)

// ExportWorkspace asks sandboxd for the workspace's export stream without
// the chunks in have (only "unchanged" if it is still snapshot since) and
// gives it to read. Not retried: the caller takes a
// snapshot again later.
func (c *Client) ExportWorkspace(ctx context.Context, have []string, since string, read func(io.Reader) error) error {
	if have == nil {
		have = []string{}
	}
	body, _ := json.Marshal(proto.ExportRequest{Have: have, Since: since})
	resp, err := c.stream(ctx, "workspace export", proto.PathWorkspaceExport, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := read(resp.Body); err != nil {
		if ctx.Err() != nil {
			return c.ctxError("workspace export", ctx.Err())
		}
		return err
	}
	return nil
}

// ImportWorkspace sends a workspace stream to sandboxd. Not retried: the
// stream is read once.
func (c *Client) ImportWorkspace(ctx context.Context, r io.Reader) (int, error) {
	resp, err := c.stream(ctx, "workspace import", proto.PathWorkspaceImport, proto.ContentTypeTar, r)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out proto.ImportResult
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return 0, fmt.Errorf("remote sandbox workspace import: decoding the result: %v: %w", err, contracts.ErrUnavailable)
	}
	return out.Entries, nil
}

// stream sends one POST and returns a 200 answer with its body unread; any
// other answer is decoded into its error.
// Its span (trace.go) ends when the body is closed.
func (c *Client) stream(ctx context.Context, name, path, contentType string, body io.Reader) (_ *http.Response, err error) {
	ctx, cancel := context.WithTimeout(ctx, WorkspaceTimeout)
	ctx, rt := c.roundTrip(ctx, strings.ReplaceAll(name, " ", "_"))
	rt.attempt(1)
	defer func() {
		if err != nil {
			rt.end(err)
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+path, body)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("remote sandbox %s: %v: %w", name, err, contracts.ErrInvalid)
	}
	req.Header.Set(proto.HeaderProtocol, proto.VersionHeader)
	req.Header.Set(proto.HeaderAuthorization, c.auth)
	req.Header.Set("User-Agent", "cairn-sandboxremote/1")
	req.Header.Set("Content-Type", contentType)
	rt.inject(ctx, req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, c.ctxError(name, ctx.Err())
		}
		return nil, fmt.Errorf("remote sandbox %s: %w: %v", name, contracts.ErrUnavailable, err)
	}
	rt.status(resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, decodeError(name, resp.StatusCode, b)
	}
	resp.Body = cancelOnClose{resp.Body, func() { cancel(); rt.end(nil) }}
	return resp, nil
}

// cancelOnClose ends the request's context once its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
