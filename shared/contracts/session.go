package contracts

import (
	"encoding/json"
	"time"
)

// Decision is a permission outcome for one tool call.
type Decision string

const (
	Allow Decision = "allow"
	Ask   Decision = "ask"
	Deny  Decision = "deny"
)

// CommandRule matches a bash command (glob pattern over the whole command
// line, `*` matches any run of characters) to a decision. First match wins.
type CommandRule struct {
	Pattern  string   `json:"pattern"`
	Decision Decision `json:"decision"`
}

// Policy is a session's permission policy. Tools maps a tool name to a
// decision; Bash refines the `bash` tool per command; Default applies to
// anything unmatched ("allow" when empty). An invalid policy denies.
type Policy struct {
	Default Decision            `json:"default,omitempty"`
	Tools   map[string]Decision `json:"tools,omitempty"`
	Bash    []CommandRule       `json:"bash,omitempty"`
	// ApprovalTimeoutSeconds: a parked approval not decided within this
	// time is denied by repair (0 = 24h).
	ApprovalTimeoutSeconds int `json:"approval_timeout_seconds,omitempty"`
}

// Limits bound one turn. Zero means the runtime default.
type Limits struct {
	MaxSteps       int `json:"max_steps,omitempty"`
	MaxTokens      int `json:"max_tokens,omitempty"`
	MaxWallSeconds int `json:"max_wall_seconds,omitempty"`
}

// ToolConfig names a tool from the registry and carries its per-session
// configuration. ReadOnly, when set, declares that this binding has no side
// effects, so recovery may re-run it (used for e.g. a bash binding that only
// inspects).
type ToolConfig struct {
	Name     string          `json:"name"`
	Config   json.RawMessage `json:"config,omitempty"`
	ReadOnly *bool           `json:"read_only,omitempty"`
}

// SandboxSpec chooses where a session's tools run. Its fingerprint (every
// field) decides whether a recorded sandbox still fits: a changed spec gets
// a new sandbox.
type SandboxSpec struct {
	// Kind: "local" (a directory in the runtime's process), "process"
	// (sandboxd on loopback) or "fargate" (sandboxd in an ECS task); ""
	// is the deployment's default.
	Kind string `json:"kind,omitempty"`
	// CPU (units, 1024 = one vCPU) and MemoryMiB size a fargate task; 0 =
	// the deployment's task definition.
	CPU       int `json:"cpu,omitempty"`
	MemoryMiB int `json:"memory_mib,omitempty"`
	// Limits bound each command a call runs (omitzero: a spec without
	// limits keeps its fingerprint).
	Limits SandboxLimits `json:"limits,omitzero"`
	// Network is what a command may reach: "none" (the default, "") or
	// "internet" (fargate on a deployment with network=public only; the
	// other kinds run on the host's network and refuse "internet").
	Network string `json:"network,omitempty"`
	// Workspace is how the workspace outlives its sandbox: "" (the
	// kind's default: a local or process sandbox keeps its directory, a
	// fargate workspace is snapshotted) or "ephemeral" (the sandbox's
	// disk dies with it; cairn snapshots the workspace to the blob store
	// after every tools step with a mutating call and restores it into
	// the next sandbox). fargate is always ephemeral; process honours
	// it, so the snapshot path runs locally; local refuses it.
	Workspace string `json:"workspace,omitempty"`
}

// Values of SandboxSpec.Network and SandboxSpec.Workspace.
const (
	NetworkNone        = "none"
	NetworkInternet    = "internet"
	WorkspaceEphemeral = "ephemeral"
)

// SandboxLimits bound every command (exec, run_script) in a sandbox; 0 =
// no limit. A command that hits one ends with a marker naming it as the
// last line of its stderr (local.LimitMarker). How each is enforced — an
// rlimit on the command, a cgroup where the host offers one, a size check
// of the workspace — is docs/ARCHITECTURE.md "Tools and sandboxes".
type SandboxLimits struct {
	// MemoryMiB bounds a command's memory (cgroup memory.max of the call,
	// else RLIMIT_AS of each process).
	MemoryMiB int `json:"memory_mib,omitempty"`
	// Pids bounds the processes (and threads) of a call at once (cgroup
	// pids.max, else RLIMIT_NPROC, which is per user and ignored for root).
	Pids int `json:"pids,omitempty"`
	// FileSizeMiB bounds every file a command writes (RLIMIT_FSIZE).
	FileSizeMiB int `json:"file_size_mib,omitempty"`
	// WorkspaceMiB bounds the workspace's total size: checked after each
	// command and before each write.
	WorkspaceMiB int `json:"workspace_mib,omitempty"`
	// CPUSeconds bounds the CPU time of each process (RLIMIT_CPU).
	CPUSeconds int `json:"cpu_seconds,omitempty"`
}

// SandboxRecord is where a session's sandbox lives, recorded on the session
// so that a later phase in another process reconnects instead of starting a
// new one. TokenRef names the token (the provider derives or fetches it);
// the token itself is never recorded or logged.
type SandboxRecord struct {
	Kind        string    `json:"kind"`
	ID          string    `json:"id"`       // ECS task ARN, or "pid:<n>"
	Endpoint    string    `json:"endpoint"` // base URL of sandboxd
	TokenRef    string    `json:"token_ref"`
	Fingerprint string    `json:"fingerprint"`
	StartedAt   time.Time `json:"started_at"`
	// CertSHA256 is the hex SHA-256 of the sandbox's TLS certificate (DER)
	// when sandboxd serves over TLS: the client pins it (no CA, no host
	// name). "" = plain HTTP (loopback, or a private network).
	CertSHA256 string `json:"cert_sha256,omitempty"`
	// Workspace is what the session's workspace snapshots say; it is kept
	// when the sandbox is released (a record with no ID then stands for
	// "no sandbox now", and keeps only Kind and Workspace).
	Workspace *WorkspaceState `json:"workspace,omitempty"`
}

// WorkspaceState is the snapshot side of a session's sandbox record.
type WorkspaceState struct {
	// Snapshot is the latest snapshot of the workspace (nil: none yet).
	Snapshot *WorkspaceSnapshot `json:"snapshot,omitempty"`
	// SnapshotError is why the latest attempt to snapshot failed, when it
	// did ("" after a success): Snapshot is then older than the workspace.
	SnapshotError string `json:"snapshot_error,omitempty"`
	// Notice is what the model is told in the result of the first call on
	// this sandbox (restored from a snapshot, and from when; or lost), ""
	// once it was told.
	Notice string `json:"notice,omitempty"`
}

// WorkspaceSnapshot names one snapshot: ID is the hex SHA-256 of its
// manifest in the blob store; At when it was taken.
type WorkspaceSnapshot struct {
	ID    string    `json:"id"`
	At    time.Time `json:"at"`
	Files int       `json:"files"`
	Bytes int64     `json:"bytes"`
	// Skipped counts what the snapshot left out: sockets, fifos, devices,
	// another user's hard-linked files, paths over 4096 bytes.
	Skipped int `json:"skipped,omitempty"`
}

// SessionSpec is everything needed to rebuild a session's toolset and model
// binding in any process: names and config only, never live objects.
type SessionSpec struct {
	Model   string       `json:"model,omitempty"` // "provider:model", e.g. "scripted:demo"
	System  string       `json:"system,omitempty"`
	Tools   []ToolConfig `json:"tools,omitempty"`
	Policy  Policy       `json:"policy,omitempty"`
	Limits  Limits       `json:"limits,omitempty"`
	Sandbox SandboxSpec  `json:"sandbox,omitempty"`
	// MCP servers whose tools the session offers besides Tools (their
	// tools are listed and pinned when the session is created: Session.MCP).
	MCP []MCPServer `json:"mcp,omitempty"`
}

// Session is a conversation: a spec, a transcript head, and the submission
// currently running (Active; submissions of a session run one at a time).
type Session struct {
	ID     string      `json:"id"`
	Owner  string      `json:"owner,omitempty"`
	Spec   SessionSpec `json:"spec"`
	Head   string      `json:"head,omitempty"`
	Active string      `json:"active,omitempty"`
	// Queued says a submission may be waiting ACCEPTED behind Active: set
	// when one is accepted (or retried) while a turn runs, cleared when a
	// look finds none. While it is false, the end of a turn starts no
	// search for the next one, and an accept into an idle session starts
	// its own submission at once (a waiting one that a crashed accept left
	// behind is repair's: its StartNext always looks).
	Queued bool `json:"queued,omitempty"`
	// Workflow is set on a session created to run a workflow node: when
	// its submission ends, the node's result is recorded and the run woken.
	Workflow *WorkflowRef `json:"workflow,omitempty"`
	// MCP is the session's MCP toolset as listed when it was created
	// (nil without MCP servers): set once, never re-bound.
	MCP *MCPPin `json:"mcp,omitempty"`
	// Sandbox is the session's current remote sandbox, if any.
	Sandbox   *SandboxRecord `json:"sandbox,omitempty"`
	Version   int64          `json:"version"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}
