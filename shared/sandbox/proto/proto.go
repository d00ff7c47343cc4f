package proto

import (
	"net/url"
	"strconv"
)

// Version is the protocol version this package speaks.
const Version = 1

// Headers of every request.
const (
	// HeaderProtocol carries the protocol version ("1"). A server answers
	// 400 "invalid" to any other value; a missing header is taken as 1.
	HeaderProtocol = "Cairn-Sandbox-Protocol"
	// HeaderAuthorization carries "Bearer <token>" on every route but
	// health.
	HeaderAuthorization = "Authorization"
)

// VersionHeader is the value of HeaderProtocol for this Version.
var VersionHeader = strconv.Itoa(Version)

// Routes of protocol version 1.
const (
	// PathHealth answers GET with Health, without authentication.
	PathHealth = "/v1/health"
	// PathCallsPrefix + url.PathEscape(call id) answers GET with a
	// contracts.CallOutcome.
	PathCallsPrefix = "/v1/calls/"
	// PathCancel answers POST CancelRequest with CancelResult: it stops
	// the mutating call of that id if it is running.
	PathCancel = "/v1/cancel"
	// pathPrefix + method is the POST route of a SandboxAPI method.
	pathPrefix = "/v1/"
)

// The SandboxAPI methods, as they appear in routes and in
// contracts.CallOutcome.Method.
const (
	MethodReadFile  = "read_file"
	MethodWriteFile = "write_file"
	MethodEditFile  = "edit_file"
	MethodListDir   = "list_dir"
	MethodStat      = "stat"
	MethodRemove    = "remove"
	MethodMakeDir   = "make_dir"
	MethodGlob      = "glob"
	MethodGrep      = "grep"
	MethodExec      = "exec"
	MethodRunScript = "run_script"
	// MethodMCP is a request to a stdio MCP server the sandbox runs
	// (contracts.MCPHost): contracts.MCPRequest → contracts.MCPResponse.
	// It is neither idempotent nor retried: a tools/call may have effects.
	MethodMCP = "mcp"
)

// Methods lists every method of the protocol, in the order of the
// contracts.SandboxAPI interface, then contracts.MCPHost's.
var Methods = []string{
	MethodReadFile, MethodWriteFile, MethodEditFile, MethodListDir, MethodStat, MethodRemove,
	MethodMakeDir, MethodGlob, MethodGrep, MethodExec, MethodRunScript, MethodMCP,
}

// Path is the POST route of a method: "/v1/" + method.
func Path(method string) string { return pathPrefix + method }

// MethodOf returns the method a POST route names, and whether it is one of
// Methods.
func MethodOf(path string) (string, bool) {
	if len(path) <= len(pathPrefix) || path[:len(pathPrefix)] != pathPrefix {
		return "", false
	}
	m := path[len(pathPrefix):]
	for _, known := range Methods {
		if m == known {
			return m, true
		}
	}
	return "", false
}

// CallPath is the route of the effect-once query for callID.
func CallPath(callID string) string { return PathCallsPrefix + url.PathEscape(callID) }

// Mutating reports whether a method changes the workspace and carries a
// CallID (write_file, edit_file, exec, run_script): a server runs it to
// completion even when the client goes away, and a client never repeats it
// blindly.
func Mutating(method string) bool {
	switch method {
	case MethodWriteFile, MethodEditFile, MethodExec, MethodRunScript:
		return true
	}
	return false
}

// Idempotent reports whether a method may be repeated freely: the
// read-only methods and make_dir. (remove is not: a repeat of a removal that
// succeeded reports not_found.)
func Idempotent(method string) bool {
	switch method {
	case MethodReadFile, MethodListDir, MethodStat, MethodGlob, MethodGrep, MethodMakeDir:
		return true
	}
	return false
}

// PathRequest is the body of list_dir, stat and make_dir.
type PathRequest struct {
	Path string `json:"path"`
}

// RemoveRequest is the body of remove.
type RemoveRequest struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive,omitempty"`
}

// GlobRequest is the body of glob.
type GlobRequest struct {
	Pattern string `json:"pattern"`
}

// CancelRequest is the body of POST /v1/cancel: the CallID of the
// mutating request to stop.
type CancelRequest struct {
	ID string `json:"id"`
}

// CancelResult answers POST /v1/cancel, once the call has ended. Stopped
// is true when the call was running and was stopped (a command's process
// group killed, the outcome recorded as cancelled); false when there was
// nothing to stop: an unknown id, a finished call, one running in another
// process. Either way a repeat of the request is harmless.
type CancelResult struct {
	Stopped bool `json:"stopped"`
}

// Empty is the result of write_file, remove and make_dir: {}.
type Empty struct{}

// Health is the answer of GET /v1/health. It reveals nothing secret.
type Health struct {
	OK       bool `json:"ok"`
	Protocol int  `json:"protocol"`
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is a wire error: one of the Code* values and a message that
// says what failed (never a host path or a secret).
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Workspace routes (shared/sandbox/snapshot): the runtime snapshots a
// workspace and restores it into a new sandbox.
const (
	// PathWorkspaceExport answers POST ExportRequest with the export
	// stream (Content-Type ContentTypeTar): the chunks not in Have, then
	// the manifest. A workspace over the snapshot limits is 413 too_large.
	PathWorkspaceExport = "/v1/workspace/export"
	// PathWorkspaceImport takes a POST workspace stream (ContentTypeTar)
	// and answers ImportResult.
	PathWorkspaceImport = "/v1/workspace/import"
	// ContentTypeTar is the media type of both streams.
	ContentTypeTar = "application/x-tar"
)

// ExportRequest lists the chunk hashes the caller holds already, and the
// id of its latest snapshot (the answer is then only "unchanged" when the
// workspace still is that snapshot).
type ExportRequest struct {
	Have  []string `json:"have"`
	Since string   `json:"since,omitempty"`
}

// ImportResult counts the entries written.
type ImportResult struct {
	Entries int `json:"entries"`
}
