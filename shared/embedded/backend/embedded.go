package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/console"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/dumpable"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/mcp"
	"github.com/cairnrun/cairn/shared/mcp/serve"
	"github.com/cairnrun/cairn/shared/model/providers"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/pricing"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/proc"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
	"github.com/cairnrun/cairn/shared/secrets"
	"github.com/cairnrun/cairn/shared/tools"
	"github.com/cairnrun/cairn/shared/workflow/isolate"
)

// EnvSandboxRunAs names the variable choosing the user the commands of
// "local" sandboxes run as, as SANDBOXD_RUN_AS does for sandboxd:
// "uid:gid" (numbers) or "self" (this process's user). Unset, it is
// local.DefaultRunAs (nobody) when the runtime runs as root and "self"
// otherwise; another uid without root refuses to start.
const EnvSandboxRunAs = "CAIRN_SANDBOX_RUN_AS"

// Config of the embedded backend.
type Config struct {
	DataDir string
	// Env is the base environment for sandboxed commands (scrubbed of the
	// runtime's secrets by the sandbox).
	Env []string
	// Sandbox tunes the local sandboxes (timeouts, caps). Without a
	// Credential, the user their commands run as is EnvSandboxRunAs's
	// (read with Getenv): run as root, an unprivileged one by default.
	Sandbox local.Options
	// SandboxKind is the default kind of a session's sandbox: "local"
	// (default: a directory, commands as subprocesses of this process) or
	// "process" (sandboxd on loopback, the local stand-in for Fargate).
	SandboxKind string
	// Sandboxd runs sandboxd for the "process" kind: the binary and the
	// arguments before its flags (`cairn sandboxd`: [cairn, "sandboxd"]).
	// Without it only "local" is served.
	Sandboxd []string
	// Isolate, when set, serves workflows: the command that evaluates a
	// script in a process of its own (`cairn isolate`: [cairn, "isolate"]).
	Isolate []string
	// Getenv, when set, configures the real model providers (anthropic,
	// openai, bedrock) from the environment (shared/model/providers);
	// without it only "scripted" is served.
	Getenv func(string) string
	// Models adds or replaces model providers.
	Models map[string]contracts.ModelClient
	// Runtime is passed to assemble.New; Owner is filled in.
	Runtime assemble.Config
}

// MCPMaxWait bounds how long a /v1/mcp tool waits before it returns a
// handle: below `cairn dev`'s 60 s write timeout.
const MCPMaxWait = 45 * time.Second

// New opens (or creates) the data directory and assembles the runtime.
func New(ctx context.Context, cfg Config) (*assemble.Runtime, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("embedded backend: DataDir is required")
	}
	// The runtime holds the model keys and the sandbox key: no process of
	// the same user (a sandboxed command) may read its environment or
	// memory through /proc.
	if err := dumpable.Off(); err != nil {
		return nil, fmt.Errorf("embedded backend: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data dir: %w", err)
	}
	lock, err := lockDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	store, err := sqlite.Open(filepath.Join(cfg.DataDir, "cairn.db"), sqlite.Options{})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("opening journal: %w", err)
	}
	// The journal is the runtime's alone, whatever the umask: as root,
	// local and process sandboxes make DATA searchable (never listable) by
	// the commands' unprivileged user (local.Searchable).
	for _, f := range []string{"cairn.db", "cairn.db-wal", "cairn.db-shm"} {
		if err := os.Chmod(filepath.Join(cfg.DataDir, f), 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			store.Close()
			lock.Close()
			return nil, fmt.Errorf("protecting the journal: %w", err)
		}
	}
	sbOpts := cfg.Sandbox
	sbOpts.Env = cfg.Env
	models := map[string]contracts.ModelClient{"scripted": scripted.New()}
	conn := &mcp.Connector{} // headers need a resolver: none without an environment
	if cfg.Getenv != nil {
		loadAWS := func(ctx context.Context) (aws.Config, error) { return config.LoadDefaultConfig(ctx) }
		res := secrets.Resolver{Getenv: cfg.Getenv, SecretsManager: secrets.Lazy(loadAWS)}
		conn.Resolve = res.Resolve
		if models, err = providers.FromEnv(providers.Config{
			Getenv: cfg.Getenv, AWS: loadAWS, Secrets: res,
		}); err != nil {
			store.Close()
			lock.Close()
			return nil, err
		}
	}
	for k, v := range cfg.Models {
		models[k] = v
	}
	clock := contracts.WallClock{}
	sandboxes, closeSandboxes, err := sandboxProviders(ctx, cfg, store, sbOpts)
	if err != nil {
		store.Close()
		lock.Close()
		return nil, err
	}
	ports := assemble.Ports{
		Journal: store, Transcript: store, Streams: store, Events: store, Queue: store, Batch: store,
		Sandboxes: sandboxes,
		Registry:  tools.NewRegistry(), MCP: conn, Models: models, Clock: clock, IDs: ids.New(clock),
		Close: func() error { return errors.Join(closeSandboxes(), store.Close(), lock.Close()) },
	}
	if len(cfg.Isolate) > 0 {
		ports.Workflows, ports.Evaluator = store.Workflows(), &isolate.Runner{Command: cfg.Isolate}
	}
	rc := cfg.Runtime
	rc.Owner = "boot_" + ids.RandomHex(6)
	if rc.Prices == nil && cfg.Getenv != nil {
		prices, err := pricing.FromEnv(cfg.Getenv) // CAIRN_PRICES over the repository's table
		if err != nil {
			ports.Close()
			return nil, err
		}
		rc.Prices = &prices
	}
	if rc.Console == nil {
		rc.Console = console.Mount
	}
	if rc.MCPServer == nil {
		rc.MCPServer = func(call func(*http.Request) (*http.Response, error)) http.Handler {
			return serve.Handler(call, MCPMaxWait)
		}
	}
	rt, err := assemble.New(ports, rc)
	if err != nil {
		ports.Close()
		return nil, err
	}
	// This process holds the data directory's lock: whatever another lease
	// owner left unfinished is a dead boot's, recovered now.
	if err := rt.Repair.Boot(ctx, rc.Owner, store.ReleaseInflight); err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}

// sandboxProviders serves "local" sandboxes under DATA/sandboxes and, with
// Config.Sandboxd, "process" ones under DATA/sandboxd (their tokens derived
// from the key in DATA/sandbox.key); SandboxKind picks the default. As the
// holder of the data directory's lock it is the only user of DATA/sandboxd:
// it reaps at once every sandboxd an earlier, killed process left running
// that no session records, and its close stops every recorded one, not
// only those this process started.
//
// The commands of local sandboxes run as EnvSandboxRunAs says (unless
// opts.Credential is set); DATA/sandboxes and DATA/sandboxd are 0711, so
// that the commands' user, which must enter its workspace below them, can
// list neither.
func sandboxProviders(ctx context.Context, cfg Config, store *sqlite.Store, opts local.Options) (contracts.SandboxProvider, func() error, error) {
	dirs := []string{"sandboxes"}
	if len(cfg.Sandboxd) > 0 {
		dirs = append(dirs, "sandboxd")
	}
	for _, d := range dirs {
		p := filepath.Join(cfg.DataDir, d)
		if err := os.MkdirAll(p, 0o711); err != nil {
			return nil, nil, fmt.Errorf("embedded backend: %w", err)
		}
		if err := os.Chmod(p, 0o711); err != nil {
			return nil, nil, fmt.Errorf("embedded backend: %w", err)
		}
	}
	base, lp := filepath.Join(cfg.DataDir, "sandboxes"), (*local.Provider)(nil)
	if opts.Credential != nil {
		lp = local.NewProvider(base, opts)
	} else {
		var runAs string
		if cfg.Getenv != nil {
			runAs = cfg.Getenv(EnvSandboxRunAs)
		}
		var err error
		if lp, err = local.NewProviderAs(base, opts, runAs); err != nil {
			return nil, nil, fmt.Errorf("embedded backend: %s=%q: %w", EnvSandboxRunAs, runAs, err)
		}
	}
	kinds := map[string]contracts.SandboxProvider{"local": lp}
	closeAll := func() error { return nil }
	if len(cfg.Sandboxd) > 0 {
		key, err := placement.LoadOrCreateKey(filepath.Join(cfg.DataDir, "sandbox.key"))
		if err != nil {
			return nil, nil, err
		}
		pp, err := proc.New(proc.Config{
			Binary: cfg.Sandboxd[0], Args: cfg.Sandboxd[1:], BaseDir: filepath.Join(cfg.DataDir, "sandboxd"),
			Sessions: store, Tokens: placement.Tokens{Key: key}, Env: opts.Env, Log: cfg.Runtime.Log,
			Snapshots: &snapshot.Store{Blobs: store}, // workspace "ephemeral": snapshots in cairn.db, as on AWS in S3
		})
		if err != nil {
			return nil, nil, err
		}
		if err := pp.Reap(ctx); err != nil {
			return nil, nil, err
		}
		kinds[proc.Kind] = pp
		closeAll = pp.StopAll
	}
	def := cfg.SandboxKind
	if def == "" {
		def = "local"
	}
	if kinds[def] == nil {
		return nil, nil, fmt.Errorf("embedded backend: sandbox kind %q: want local, or process with a sandboxd command", def)
	}
	return &placement.Router{Default: def, Kinds: kinds}, closeAll, nil
}

type dirLock struct{ f *os.File }

// Close releases the lock, explicitly: a close alone leaves it held while a
// process being forked still holds a copy of the descriptor (until its exec).
func (l dirLock) Close() error {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return l.f.Close()
}

func lockDir(dir string) (dirLock, error) {
	f, err := os.OpenFile(filepath.Join(dir, "cairn.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return dirLock{}, fmt.Errorf("opening lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return dirLock{}, fmt.Errorf("data dir %s is in use by another cairn process (stop it, or talk to it with --addr): %w", dir, err)
	}
	return dirLock{f}, nil
}

// Logger is the default JSON logger of the embedded binaries.
func Logger(w *os.File, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
