package fargate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// Kind is the sandbox kind this package serves.
const Kind = "fargate"

// SessionTag is the ECS tag key carrying the session id on every task.
const SessionTag = "cairn:session"

// Defaults applied by New to zero Config fields.
const (
	DefaultPort        = 7070
	DefaultWaitRunning = 2 * time.Minute
	DefaultPollEvery   = 2 * time.Second
	DefaultIdleTimeout = 15 * time.Minute
	// probeTimeout bounds one health probe of a sandbox.
	probeTimeout = 5 * time.Second
	// connectTimeout bounds connecting to a task's sandboxd.
	connectTimeout = 3 * time.Second
	// cleanupTimeout bounds stopping a task after the caller's context is
	// gone.
	cleanupTimeout = 30 * time.Second
)

// ECSAPI is the part of the ECS client the provider uses (*ecs.Client
// satisfies it; tests wrap it to count calls).
type ECSAPI interface {
	RunTask(ctx context.Context, in *ecs.RunTaskInput, opts ...func(*ecs.Options)) (*ecs.RunTaskOutput, error)
	DescribeTasks(ctx context.Context, in *ecs.DescribeTasksInput, opts ...func(*ecs.Options)) (*ecs.DescribeTasksOutput, error)
	StopTask(ctx context.Context, in *ecs.StopTaskInput, opts ...func(*ecs.Options)) (*ecs.StopTaskOutput, error)
}

// Sandbox networks (Config.Network).
const (
	// NetworkPrivate: isolated subnets reached through VPC endpoints; the
	// runtime is in the VPC and dials the task's private IP (plain HTTP
	// unless Config.TLS).
	NetworkPrivate = "private"
	// NetworkPublic: public subnets with an internet gateway; tasks get a
	// public IP (read with EC2), which the runtime dials over TLS pinned
	// to the task's own certificate.
	NetworkPublic = "public"
)

// Sandbox is what Dial returns: the SandboxAPI of a sandboxd plus its
// health check (a *remote.Client).
type Sandbox = placement.Remote

// Config configures a Provider. ECS, Cluster, TaskDefinition, Container,
// Subnets, Sessions and a Tokens key are required.
type Config struct {
	ECS            ECSAPI
	Cluster        string
	TaskDefinition string // family[:revision] or ARN; its command runs sandboxd on 0.0.0.0:Port
	Container      string // the sandboxd container's name in the task definition
	Subnets        []string
	SecurityGroups []string // the tasks' groups for spec network "none" (the default)
	// Network is the deployment's sandbox network: NetworkPrivate ("" too)
	// or NetworkPublic, where RunTask assigns a public IP, the endpoint is
	// that IP (EC2 required) and TLS is always on.
	Network string
	// InternetSecurityGroups are the tasks' groups for spec network
	// "internet"; only on NetworkPublic, and without them "internet" is
	// refused (Check).
	InternetSecurityGroups []string
	// EC2 reads a task ENI's public IP (NewEC2); required on
	// NetworkPublic.
	EC2 EC2API
	// TLS gives every new task a certificate and key of its own
	// (placement.NewCert, passed as SANDBOXD_TLS_CERT/KEY container
	// overrides), records the certificate's SHA-256 on the session
	// (CertSHA256) and dials with it pinned. Always on with NetworkPublic;
	// the private network may switch it on. The key is readable by whoever
	// may ecs:DescribeTasks in the account (the overrides are part of the
	// task), as the token hash already is.
	TLS bool
	// Sessions is where the sandbox record is kept (the journal).
	Sessions placement.Sessions
	// Tokens derives each sandbox's bearer token from its record.
	Tokens placement.Tokens
	// Port is sandboxd's port in the task (default DefaultPort).
	Port int
	// IdleTimeout is passed to sandboxd as SANDBOXD_IDLE_TIMEOUT (default
	// DefaultIdleTimeout).
	IdleTimeout time.Duration
	// WaitRunning bounds a new task's way to RUNNING and a healthy
	// sandboxd (default DefaultWaitRunning).
	WaitRunning time.Duration
	// PollEvery is the DescribeTasks and health polling interval (default
	// DefaultPollEvery).
	PollEvery time.Duration
	// Dial makes the client of a sandboxd, pinning certSHA256 when it is
	// not "" (default remote.New sharing one HTTP client of the provider,
	// remote.NewHTTPClient; a pinned client clones it with the pin).
	Dial func(endpoint, token, certSHA256 string) (Sandbox, error)
	// Endpoint maps a task's address (private IP, or public IP on
	// NetworkPublic) and Port to sandboxd's base URL (default
	// http://IP:PORT, https://IP:PORT with TLS).
	Endpoint func(ip string, port int) string
	// Log receives lifecycle messages (never a token); nil discards.
	Log *slog.Logger
	// Snapshots keeps every session's workspace beyond its task: it is
	// snapshotted after each tools step with a mutating call and restored
	// into the next task (nil: workspaces die with their tasks).
	Snapshots *snapshot.Store
}

// Provider is the "fargate" SandboxProvider. It is safe for concurrent use;
// concurrent Acquires of one session in one Provider run at most one task.
type Provider struct {
	cfg      Config
	log      *slog.Logger
	locks    placement.Locks
	acquirer placement.Acquirer // runs Acquire with reuse and newSandbox
}

var (
	_ contracts.SandboxProvider = (*Provider)(nil)
	_ contracts.SandboxChecker  = (*Provider)(nil)
)

// New checks cfg and returns a provider. It calls nothing.
func New(cfg Config) (*Provider, error) {
	missing := ""
	switch {
	case cfg.ECS == nil:
		missing = "ECS client"
	case cfg.Cluster == "":
		missing = "cluster"
	case cfg.TaskDefinition == "":
		missing = "task definition"
	case cfg.Container == "":
		missing = "container name"
	case len(cfg.Subnets) == 0:
		missing = "subnets"
	case cfg.Sessions == nil:
		missing = "session store"
	case cfg.Network == NetworkPublic && cfg.EC2 == nil:
		missing = "EC2 client (the public network reads each task's public IP)"
	}
	if missing != "" {
		return nil, fmt.Errorf("configuring fargate sandboxes: no %s: %w", missing, contracts.ErrInvalid)
	}
	if err := cfg.Tokens.Check(); err != nil {
		return nil, fmt.Errorf("configuring fargate sandboxes: %w", err)
	}
	switch cfg.Network {
	case "":
		cfg.Network = NetworkPrivate
	case NetworkPrivate:
	case NetworkPublic:
		cfg.TLS = true // a token never crosses the internet in clear
	default:
		return nil, fmt.Errorf("configuring fargate sandboxes: network %q: want %s or %s: %w", cfg.Network, NetworkPrivate, NetworkPublic, contracts.ErrInvalid)
	}
	if cfg.Port <= 0 {
		cfg.Port = DefaultPort
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.WaitRunning <= 0 {
		cfg.WaitRunning = DefaultWaitRunning
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	if cfg.Dial == nil {
		shared := remote.NewHTTPClient(connectTimeout)
		cfg.Dial = func(endpoint, token, certSHA256 string) (Sandbox, error) {
			c, err := remote.New(endpoint, token, remote.Options{HTTPClient: shared, CertSHA256: certSHA256})
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	if cfg.Endpoint == nil {
		scheme := "http://"
		if cfg.TLS {
			scheme = "https://"
		}
		cfg.Endpoint = func(ip string, port int) string { return scheme + net.JoinHostPort(ip, strconv.Itoa(port)) }
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p := &Provider{cfg: cfg, log: log}
	p.acquirer = placement.Acquirer{
		Kind: Kind, Sessions: cfg.Sessions, Locks: &p.locks, Log: log,
		IDKey: "task_arn", RecordedMsg: "sandbox task recorded",
		CheckSessionID: checkSessionTag, Reuse: p.reuse, Start: p.newSandbox,
		Snapshots: cfg.Snapshots, // a task's disk dies with it: every workspace is snapshotted
	}
	return p, nil
}

// Acquire returns the session's sandbox: the recorded task when its
// fingerprint matches, ECS reports it RUNNING and sandboxd answers with its
// token; else a new task, recorded on the session (the old one stopped).
func (p *Provider) Acquire(ctx context.Context, sessionID string, spec contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	if err := p.Check(spec); err != nil {
		return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
	}
	return p.acquirer.Acquire(ctx, sessionID, spec)
}

// Check refuses a spec network this deployment cannot give: "internet"
// needs the public network and its security groups (the private network
// has no route out). It calls nothing.
func (p *Provider) Check(spec contracts.SandboxSpec) error {
	return placement.CheckFargateNetwork(spec, string(p.cfg.Network), p.cfg.Network == NetworkPublic, len(p.cfg.InternetSecurityGroups))
}

// checkSessionTag accepts a session id that fits in the task's SessionTag.
func checkSessionTag(sessionID string) error {
	if sessionID == "" || len(sessionID) > 256 {
		return fmt.Errorf("acquiring sandbox: session id %q is empty or longer than an ECS tag value: %w", sessionID, contracts.ErrInvalid)
	}
	return nil
}

// newSandbox runs a task for Acquire; one whose record is not stored is
// stopped.
func (p *Provider) newSandbox(ctx context.Context, sessionID string, spec contracts.SandboxSpec, fp string) (placement.Started, error) {
	sb, rec, err := p.launch(ctx, sessionID, spec, fp)
	if err != nil {
		return placement.Started{}, err
	}
	stop := func(ctx context.Context) {
		p.stopQuietly(ctx, sessionID, rec.ID, "cairn: lost the race to record the session's sandbox")
	}
	return placement.Started{Sandbox: sb, Record: rec, Stop: stop}, nil
}

// reuse returns a client of the recorded task if it fits and works, or nil
// after stopping it when it does not (a stopped or missing task needs no
// stop). An ECS error is returned: without knowing the task's state a new
// one must not be run beside it.
func (p *Provider) reuse(ctx context.Context, sessionID string, old *contracts.SandboxRecord, fp string) (contracts.SandboxAPI, error) {
	task, err := p.describe(ctx, old.ID)
	if err != nil {
		return nil, err
	}
	unpinned := p.cfg.TLS && old.CertSHA256 == "" // placed before TLS: its token would go in clear
	if old.Fingerprint == fp && running(task) && !unpinned {
		sb, err := p.cfg.Dial(old.Endpoint, p.cfg.Tokens.Mint(sessionID, old.TokenRef), old.CertSHA256)
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			err = placement.Probe(pctx, sb)
			cancel()
			if err == nil {
				p.log.DebugContext(ctx, "sandbox reconnected", "session_id", sessionID, "task_arn", old.ID)
				return sb, nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p.log.InfoContext(ctx, "recorded sandbox task unhealthy, replacing it", "session_id", sessionID, "task_arn", old.ID, "error", err)
	} else {
		p.log.InfoContext(ctx, "recorded sandbox task does not fit, replacing it", "session_id", sessionID, "task_arn", old.ID,
			"last_status", lastStatus(task), "fingerprint_changed", old.Fingerprint != fp, "without_certificate", unpinned)
	}
	if !down(task) {
		p.stopQuietly(ctx, sessionID, old.ID, "cairn: sandbox replaced")
	}
	return nil, nil
}

// Release stops the session's recorded task and clears the record but for
// its workspace state (placement.Released). A
// session holding no "fargate" sandbox is left alone.
func (p *Provider) Release(ctx context.Context, sessionID string) error {
	unlock, err := p.locks.Lock(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("releasing sandbox of session %s: %w", sessionID, err)
	}
	defer unlock()
	s, err := p.cfg.Sessions.GetSession(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("releasing sandbox of session %s: %w", sessionID, err)
	}
	rec := s.Sandbox
	if !placement.Running(rec) || rec.Kind != Kind {
		return nil
	}
	if err := p.stop(ctx, rec.ID, "cairn: sandbox released"); err != nil {
		return fmt.Errorf("releasing sandbox of session %s: %w", sessionID, err)
	}
	if _, err := placement.Replace(ctx, p.cfg.Sessions, sessionID, rec, placement.Released(rec)); err != nil {
		if errors.Is(err, contracts.ErrConflict) {
			return nil // a newer sandbox was placed meanwhile: it is not ours to clear
		}
		return fmt.Errorf("releasing sandbox of session %s: %w", sessionID, err)
	}
	p.log.InfoContext(ctx, "sandbox released", "session_id", sessionID, "task_arn", rec.ID)
	return nil
}
