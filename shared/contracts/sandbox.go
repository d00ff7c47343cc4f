package contracts

import (
	"context"
	"encoding/json"
	"time"
)

// FileInfo describes one workspace entry. Path is workspace-relative with
// forward slashes.
type FileInfo struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	IsDir   bool      `json:"is_dir"`
	Mode    uint32    `json:"mode"`
	ModTime time.Time `json:"mod_time"`
}

// ReadFileRequest reads Limit bytes from Offset (Limit 0 = up to the cap).
type ReadFileRequest struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset,omitempty"`
	Limit  int64  `json:"limit,omitempty"`
}

// ReadFileResult carries the content; Truncated when more remains.
type ReadFileResult struct {
	Content   string `json:"content"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
}

// WriteFileRequest creates or replaces a file (parents created).
type WriteFileRequest struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Append  bool   `json:"append,omitempty"`
	CallID  string `json:"call_id,omitempty"`
}

// EditFileRequest replaces Old with New; Old must occur exactly once unless
// All is set.
type EditFileRequest struct {
	Path   string `json:"path"`
	Old    string `json:"old"`
	New    string `json:"new"`
	All    bool   `json:"all,omitempty"`
	CallID string `json:"call_id,omitempty"`
}

// EditFileResult reports how many occurrences were replaced.
type EditFileResult struct {
	Replacements int `json:"replacements"`
}

// GrepRequest searches file contents under Path (default ".") for the RE2
// Pattern, optionally restricted to files matching Glob.
type GrepRequest struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	Glob       string `json:"glob,omitempty"`
	MaxMatches int    `json:"max_matches,omitempty"`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// GrepResult lists matches; Truncated when MaxMatches was reached.
type GrepResult struct {
	Matches   []GrepMatch `json:"matches"`
	Truncated bool        `json:"truncated,omitempty"`
}

// ExecRequest runs Command with `bash -c` in the workspace (Dir relative to
// it). Timeout 0 = the sandbox default.
type ExecRequest struct {
	Command string        `json:"command"`
	Dir     string        `json:"dir,omitempty"`
	Stdin   string        `json:"stdin,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	CallID  string        `json:"call_id,omitempty"`
	// Traceparent is the W3C trace context of the tool call's span: the
	// command gets it as TRACEPARENT, the only thing of the runtime it
	// gets (a malformed value is dropped).
	Traceparent string `json:"traceparent,omitempty"`
}

// RunScriptRequest runs Source with the named interpreter ("python").
type RunScriptRequest struct {
	Language string        `json:"language"`
	Source   string        `json:"source"`
	Timeout  time.Duration `json:"timeout,omitempty"`
	CallID   string        `json:"call_id,omitempty"`
	// Traceparent: as ExecRequest's.
	Traceparent string `json:"traceparent,omitempty"`
}

// ExecResult is a finished command. TimedOut: the process group was killed
// at the deadline. Truncated: output exceeded the cap (a marker is appended).
type ExecResult struct {
	ExitCode  int           `json:"exit_code"`
	Stdout    string        `json:"stdout"`
	Stderr    string        `json:"stderr"`
	TimedOut  bool          `json:"timed_out,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
	Duration  time.Duration `json:"duration"`
}

// SandboxAPI is the boundary tools run behind (docs/DESIGN.md §6): the same eleven
// methods for the local directory, the remote client and sandboxd.
//
// Contract (checked by the sandboxtest conformance suite):
//   - Every path is workspace-relative; "..", absolute paths and symlinks
//     resolving outside the workspace are refused with ErrPermission.
//   - Missing files → ErrNotFound; bad input → ErrInvalid; payloads or reads
//     over the cap → ErrTooLarge (or Truncated where the result says so).
//   - Exec/RunScript run in their own process group with a timeout that
//     kills the group; the environment is scrubbed of the runtime's secrets.
//     A non-zero exit is a result, not an error.
type SandboxAPI interface {
	ReadFile(ctx context.Context, r ReadFileRequest) (ReadFileResult, error)
	WriteFile(ctx context.Context, r WriteFileRequest) error
	EditFile(ctx context.Context, r EditFileRequest) (EditFileResult, error)
	ListDir(ctx context.Context, path string) ([]FileInfo, error)
	Stat(ctx context.Context, path string) (FileInfo, error)
	Remove(ctx context.Context, path string, recursive bool) error
	MakeDir(ctx context.Context, path string) error
	Glob(ctx context.Context, pattern string) ([]string, error)
	Grep(ctx context.Context, r GrepRequest) (GrepResult, error)
	Exec(ctx context.Context, r ExecRequest) (ExecResult, error)
	RunScript(ctx context.Context, r RunScriptRequest) (ExecResult, error)
}

// CallState is what a sandbox knows about one tool call id.
type CallState string

// Call states: the sandbox never saw the id (or forgot it: the record is
// bounded), it is running it now, or it finished and recorded the outcome.
const (
	CallUnknown CallState = "unknown"
	CallRunning CallState = "running"
	CallDone    CallState = "done"
)

// CallError is a recorded failure: Code is the sentinel's wire code
// ("not_found", "invalid", …; see shared/sandbox/proto) and Message its text.
type CallError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// CallOutcome answers "did call X run, and with what result?". Method is
// the SandboxAPI method ("exec", "write_file", …); Result its JSON result
// (absent for methods that return only an error); Error set when it failed.
type CallOutcome struct {
	CallID string          `json:"call_id"`
	State  CallState       `json:"state"`
	Method string          `json:"method,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *CallError      `json:"error,omitempty"`
}

// CallLedger is implemented by sandboxes that make mutating calls
// effect-once (docs/DESIGN.md §6): a WriteFile, EditFile, Exec or RunScript
// request carrying a CallID runs at most once; a repeat with the same id
// (also while the first is still running) returns the recorded outcome,
// and a repeat with the same id but a different request is ErrConflict.
// CallOutcome is the query recovery asks before it reports a call as
// interrupted.
type CallLedger interface {
	CallOutcome(ctx context.Context, callID string) (CallOutcome, error)
}

// SandboxProvider places a session's sandbox. Acquire returns the session's
// sandbox, creating it if needed; it is idempotent per session and spec.
// Release frees it (files may be kept for the next Acquire).
type SandboxProvider interface {
	Acquire(ctx context.Context, sessionID string, spec SandboxSpec) (SandboxAPI, error)
	Release(ctx context.Context, sessionID string) error
}

// SandboxChecker is implemented by providers that can say, without
// placing anything, whether they serve a sandbox spec (its kind and
// settings). The engine asks it when a session is created, so a spec no
// provider of this deployment serves is refused up front (an error
// wrapping ErrInvalid, naming the kinds served) rather than at the first
// tool call. It must be cheap and side-effect free. A provider without it
// serves only the "local" kind.
type SandboxChecker interface {
	Check(spec SandboxSpec) error
}

// DurableWorkspace is implemented by the sandboxes Acquire returns when
// the session's workspace outlives its sandbox through snapshots
// (SandboxSpec.Workspace "ephemeral", and every fargate sandbox). The tools
// phase snapshots after a step with a mutating call, and prefixes the
// notice to the result of the first call it runs on a new sandbox.
type DurableWorkspace interface {
	// WorkspaceNotice is what the model must be told about the workspace
	// of this sandbox ("" = nothing): restored from a snapshot (and from
	// when), or lost.
	WorkspaceNotice() string
	// NoticeGiven records that the notice was given, so the next call does
	// not repeat it.
	NoticeGiven(ctx context.Context) error
	// SaveWorkspace snapshots the workspace now (incrementally) and
	// records the snapshot on the session's sandbox record.
	SaveWorkspace(ctx context.Context) error
}
