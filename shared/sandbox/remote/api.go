package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
)

// The eleven SandboxAPI methods. Read-only calls and MakeDir are retried
// after connection errors and 502/503/504 answers. WriteFile, EditFile,
// Exec and RunScript are retried so only when their request carries a
// CallID — sandboxd then runs it at most once and answers a repeat with the
// recorded outcome — and otherwise only when no connection could be made
// (the request never left). Remove is never repeated once sent. A mutating
// call with a CallID whose ctx is cancelled is stopped in sandboxd too (see
// CancelCall).

// ReadFile reads a workspace file.
func (c *Client) ReadFile(ctx context.Context, r contracts.ReadFileRequest) (contracts.ReadFileResult, error) {
	var out contracts.ReadFileResult
	if err := c.post(ctx, proto.MethodReadFile, r, "", 0, &out); err != nil {
		return contracts.ReadFileResult{}, err
	}
	return out, nil
}

// WriteFile creates, replaces or appends to a workspace file.
func (c *Client) WriteFile(ctx context.Context, r contracts.WriteFileRequest) error {
	return c.post(ctx, proto.MethodWriteFile, r, r.CallID, 0, &proto.Empty{})
}

// EditFile replaces text in a workspace file.
func (c *Client) EditFile(ctx context.Context, r contracts.EditFileRequest) (contracts.EditFileResult, error) {
	var out contracts.EditFileResult
	if err := c.post(ctx, proto.MethodEditFile, r, r.CallID, 0, &out); err != nil {
		return contracts.EditFileResult{}, err
	}
	return out, nil
}

// ListDir lists a workspace directory.
func (c *Client) ListDir(ctx context.Context, path string) ([]contracts.FileInfo, error) {
	var out []contracts.FileInfo
	if err := c.post(ctx, proto.MethodListDir, proto.PathRequest{Path: path}, "", 0, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Stat describes a workspace entry.
func (c *Client) Stat(ctx context.Context, path string) (contracts.FileInfo, error) {
	var out contracts.FileInfo
	if err := c.post(ctx, proto.MethodStat, proto.PathRequest{Path: path}, "", 0, &out); err != nil {
		return contracts.FileInfo{}, err
	}
	return out, nil
}

// Remove deletes a workspace entry (a directory only when recursive).
func (c *Client) Remove(ctx context.Context, path string, recursive bool) error {
	return c.post(ctx, proto.MethodRemove, proto.RemoveRequest{Path: path, Recursive: recursive}, "", 0, &proto.Empty{})
}

// MakeDir creates a workspace directory and its parents.
func (c *Client) MakeDir(ctx context.Context, path string) error {
	return c.post(ctx, proto.MethodMakeDir, proto.PathRequest{Path: path}, "", 0, &proto.Empty{})
}

// Glob lists the workspace paths matching a pattern.
func (c *Client) Glob(ctx context.Context, pattern string) ([]string, error) {
	var out []string
	if err := c.post(ctx, proto.MethodGlob, proto.GlobRequest{Pattern: pattern}, "", 0, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Grep searches workspace files.
func (c *Client) Grep(ctx context.Context, r contracts.GrepRequest) (contracts.GrepResult, error) {
	var out contracts.GrepResult
	if err := c.post(ctx, proto.MethodGrep, r, "", 0, &out); err != nil {
		return contracts.GrepResult{}, err
	}
	return out, nil
}

// Exec runs a command in the sandbox. The call may take the command's
// timeout (ExecDefaultTimeout when unset) plus ExecMargin, or Timeout if
// longer. If ctx's deadline comes first the call returns ErrTimeout while
// the command runs on in sandboxd to its own timeout, and its outcome is
// recorded under the CallID. If ctx is cancelled first, the command is
// killed in sandboxd (CancelCall) and the call returns context.Canceled.
func (c *Client) Exec(ctx context.Context, r contracts.ExecRequest) (contracts.ExecResult, error) {
	var out contracts.ExecResult
	if err := c.post(ctx, proto.MethodExec, r, r.CallID, c.execTimeout(r.Timeout), &out); err != nil {
		return contracts.ExecResult{}, err
	}
	return out, nil
}

// RunScript runs a script in the sandbox, under the rules of Exec.
func (c *Client) RunScript(ctx context.Context, r contracts.RunScriptRequest) (contracts.ExecResult, error) {
	var out contracts.ExecResult
	if err := c.post(ctx, proto.MethodRunScript, r, r.CallID, c.execTimeout(r.Timeout), &out); err != nil {
		return contracts.ExecResult{}, err
	}
	return out, nil
}

// MCPTimeout bounds one request to a stdio MCP server in the sandbox: its
// start (a first npx download) and a call (the connector's own bounds are
// shorter; this only ends a request nobody answers).
const MCPTimeout = 10 * time.Minute

var _ contracts.MCPHost = (*Client)(nil)

// MCP sends a request to a stdio MCP server the sandbox runs (starting it
// there if it is not running). It is sent once: a tools/call that got no
// answer may have run.
func (c *Client) MCP(ctx context.Context, r contracts.MCPRequest) (contracts.MCPResponse, error) {
	var out contracts.MCPResponse
	if err := c.post(ctx, proto.MethodMCP, r, "", MCPTimeout, &out); err != nil {
		return contracts.MCPResponse{}, err
	}
	return out, nil
}

// execTimeout is the deadline of a command call.
func (c *Client) execTimeout(command time.Duration) time.Duration {
	if command <= 0 {
		command = ExecDefaultTimeout
	}
	return max(c.timeout, command+ExecMargin)
}

// post sends one method call. timeout 0 = the client's Timeout. out is
// filled only on success.
func (c *Client) post(ctx context.Context, method string, req any, callID string, timeout time.Duration, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("remote sandbox %s: encoding the request: %v: %w", method, err, contracts.ErrInvalid)
	}
	retry := retryDial
	if proto.Idempotent(method) || (proto.Mutating(method) && callID != "") {
		retry = retryAll
	}
	if timeout <= 0 {
		timeout = c.timeout
	}
	err = c.do(ctx, request{name: method, method: http.MethodPost, path: proto.Path(method), body: body, retry: retry, timeout: timeout}, out)
	if proto.Mutating(method) {
		err = c.stopped(ctx, callID, err)
	}
	return err
}
