package local

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultMaxTime   = 10 * time.Minute
	DefaultOutputCap = 64 << 10
	DefaultReadCap   = 256 << 10
	DefaultMaxWrite  = 8 << 20
)

// Options configures a Sandbox sandbox. Zero fields take the defaults above.
type Options struct {
	// DefaultTimeout applies to Exec/RunScript requests without a Timeout.
	DefaultTimeout time.Duration
	// MaxTimeout clamps every requested timeout.
	MaxTimeout time.Duration
	// OutputCap bounds stdout and stderr, each, in bytes.
	OutputCap int
	// ReadCap bounds one ReadFile, in bytes.
	ReadCap int64
	// MaxWrite bounds the content of one WriteFile (and an edited file).
	MaxWrite int64
	// Env is the base environment of commands (the caller passes
	// os.Environ()). It is scrubbed with Scrub, and HOME is set to the
	// workspace root.
	Env []string
	// Shell runs Exec commands as `Shell -c command` (default "bash").
	Shell string
	// Python runs RunScript "python" sources (default "python3").
	Python string
	// StateDir, when set, holds the call ledger (outside the workspace,
	// out of a command's way — but a command running as this process's
	// user can reach it, so the ledger then guards against crashes, not
	// against a hostile command; with Credential, a StateDir of mode 0700
	// is out of its reach): mutating requests with a CallID become
	// effect-once (contracts.CallLedger).
	StateDir string
	// MaxCalls bounds the ledger (default DefaultMaxCalls).
	MaxCalls int
	// Limits bound every command (the session's spec.sandbox.limits;
	// limits.go says how each is enforced).
	Limits contracts.SandboxLimits
	// Credential, when set, is the uid/gid (and groups) every command runs
	// as (SysProcAttr.Credential): sandboxd (shared/sandbox/server,
	// SANDBOXD_RUN_AS) and the Provider running as root set it to an
	// unprivileged user that owns the workspace but not StateDir (RunAs,
	// Own: runas.go). New itself neither sets it nor gives the workspace
	// away. nil: the sandbox's own user.
	Credential *syscall.Credential
}

func (o Options) withDefaults() Options {
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = DefaultMaxTime
	}
	if o.DefaultTimeout > o.MaxTimeout {
		o.DefaultTimeout = o.MaxTimeout
	}
	if o.OutputCap <= 0 {
		o.OutputCap = DefaultOutputCap
	}
	if o.ReadCap <= 0 {
		o.ReadCap = DefaultReadCap
	}
	if o.MaxWrite <= 0 {
		o.MaxWrite = DefaultMaxWrite
	}
	if o.Shell == "" {
		o.Shell = "bash"
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	return o
}

// Sandbox is the SandboxAPI over a host directory: files are confined to the
// root (symlinks included) and commands run as subprocesses in their own
// process group. It is safe for concurrent use.
type Sandbox struct {
	root  string
	ws    *os.Root // the workspace directory, opened once: every file method goes through it
	opts  Options
	env   []string
	calls *ledger // nil without Options.StateDir

	running *inflights // calls CancelCall can stop

	contain Containment // HostContainment(); tests may force a weaker one

	snaps snapshot.Cache // chunk hashes of files exported before (archive.go)

	mcp *mcpHost // its stdio MCP servers (mcp.go); the Provider's per session
}

var (
	_ contracts.SandboxAPI = (*Sandbox)(nil)
	_ contracts.CallLedger = (*Sandbox)(nil)
)

// New returns a sandbox rooted at root, creating the directory if it is
// missing. The root is resolved with EvalSymlinks so that confinement checks
// compare real paths.
func New(root string, opts Options) (*Sandbox, error) {
	if root == "" {
		return nil, fmt.Errorf("creating local sandbox: empty root: %w", contracts.ErrInvalid)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("creating local sandbox at %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("creating local sandbox at %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("resolving local sandbox root %s: %w", root, err)
	}
	// The root stays open for the sandbox's life (os.Root closes it when
	// the sandbox is collected): a command renaming the workspace directory
	// or replacing a parent of it by a symlink cannot move it.
	ws, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("opening local sandbox root %s: %w", root, err)
	}
	opts = opts.withDefaults()
	l := &Sandbox{root: real, ws: ws, opts: opts, env: commandEnv(opts.Env, real), running: newInflights(), contain: HostContainment(), mcp: &mcpHost{}}
	if opts.StateDir != "" {
		if l.calls, err = newLedger(filepath.Join(opts.StateDir, "calls"), opts.MaxCalls); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Root is the resolved host directory backing the workspace.
func (l *Sandbox) Root() string { return l.root }
