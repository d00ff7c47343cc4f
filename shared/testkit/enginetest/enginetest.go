package enginetest

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/console"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/mcp"
	"github.com/cairnrun/cairn/shared/mcp/serve"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/repair"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/secrets"
	"github.com/cairnrun/cairn/shared/tools"
)

// Start is the time every ManualClock of New starts at.
var Start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Owner is the lease owner id of a Harness's runtime.
const Owner = "test-owner"

// User is the principal a Harness creates sessions for (Session), and the
// principal of every request to its API unless the configuration says how
// the API authenticates.
const User = "test"

// ManualClock is a clock tests move by hand. It is safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a ManualClock that reads t until it is advanced.
func NewClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Harness is an assembled embedded runtime in a test's temporary directory.
type Harness struct {
	RT         *assemble.Runtime
	Store      *sqlite.Store    // every store port and the queue
	Model      *scripted.Client // registered as provider "scripted"
	Clock      *ManualClock     // the runtime's, the store's and the ids' clock
	SandboxDir string           // holds one workspace directory per session id
	DBPath     string           // the store's SQLite file

	t testing.TB
}

// New assembles a runtime on a fresh SQLite file and local sandboxes under
// t.TempDir(), with every built-in tool, the scripted model, a ManualClock at
// Start and lease owner Owner. Each opt may change the ports before
// assembly. The store is closed when the test ends.
func New(t testing.TB, opts ...func(*assemble.Ports)) *Harness {
	t.Helper()
	return NewConfig(t, assemble.Config{}, opts...)
}

// NewConfig is New with cfg as the runtime's configuration (e.g. how its
// API authenticates); its Owner and Log default to New's.
// MCPMaxWait bounds a /v1/mcp tool's wait in a harness's API.
const MCPMaxWait = 20 * time.Second

func NewConfig(t testing.TB, cfg assemble.Config, opts ...func(*assemble.Ports)) *Harness {
	t.Helper()
	dir := t.TempDir()
	clock := NewClock(Start)
	store, err := sqlite.Open(filepath.Join(dir, "cairn.db"), sqlite.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	model := scripted.New()
	sandboxes := filepath.Join(dir, "sandboxes")
	ports := assemble.Ports{
		Journal: store, Transcript: store, Streams: store, Events: store, Queue: store, Batch: store,
		Sandboxes: local.NewProvider(sandboxes, local.Options{Env: []string{"PATH=" + os.Getenv("PATH")}}),
		Registry:  tools.NewRegistry(), Models: map[string]contracts.ModelClient{"scripted": model},
		MCP:   &mcp.Connector{Resolve: secrets.Resolver{Getenv: os.Getenv}.Resolve},
		Clock: clock, IDs: ids.New(clock),
	}
	for _, o := range opts {
		o(&ports)
	}
	if cfg.Owner == "" {
		cfg.Owner = Owner
	}
	if cfg.Log == nil {
		cfg.Log = testLog(t)
	}
	if cfg.Console == nil { // /console/, as the api function and cairn dev serve it
		cfg.Console = console.Mount
	}
	if cfg.MCPServer == nil { // /v1/mcp, as every deployment's api serves it
		cfg.MCPServer = func(call func(*http.Request) (*http.Response, error)) http.Handler {
			return serve.Handler(call, MCPMaxWait)
		}
	}
	if cfg.Authenticate == nil {
		cfg.Authenticate = func(*http.Request) (contracts.Principal, error) { return contracts.Principal{Name: User}, nil }
	}
	rt, err := assemble.New(ports, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Harness{t: t, RT: rt, Store: store, Model: model, Clock: clock, SandboxDir: sandboxes, DBPath: filepath.Join(dir, "cairn.db")}
}

// AllTools enables every built-in tool (but the opt-in ones).
func AllTools() []contracts.ToolConfig {
	var out []contracts.ToolConfig
	for _, d := range tools.NewRegistry().Definitions() {
		if !d.OptIn {
			out = append(out, contracts.ToolConfig{Name: d.Name})
		}
	}
	return out
}

// Session creates a session for User; a spec without Tools gets AllTools.
func (h *Harness) Session(spec contracts.SessionSpec) contracts.Session {
	h.t.Helper()
	if spec.Tools == nil {
		spec.Tools = AllTools()
	}
	s, err := h.RT.Engine.CreateSession(context.Background(), User, spec)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// Submit accepts prompt in the session, without an idempotency key.
func (h *Harness) Submit(sessionID, prompt string) contracts.Submission {
	h.t.Helper()
	sub, _, err := h.RT.Engine.Accept(context.Background(), sessionID, prompt, "")
	if err != nil {
		h.t.Fatal(err)
	}
	return sub
}

// Accept submits "hello" to a new session running model.
func (h *Harness) Accept(model string) contracts.Submission {
	h.t.Helper()
	return h.Submit(h.Session(contracts.SessionSpec{Model: model}).ID, "hello")
}

// Drain handles queued messages until every queue is empty.
func (h *Harness) Drain() {
	h.t.Helper()
	ctx := context.Background()
	for range 10000 {
		n := 0
		for _, q := range h.RT.Workers.Queues {
			got, err := h.RT.Workers.Once(ctx, q, 10)
			if err != nil {
				h.t.Fatal(err)
			}
			n += got
		}
		if n == 0 {
			return
		}
	}
	h.t.Fatal("queues never drained")
}

// Get reads the stored submission.
func (h *Harness) Get(id string) contracts.Submission {
	h.t.Helper()
	s, err := h.Store.GetSubmission(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// Set rewrites the stored submission through mod (a conditional write).
func (h *Harness) Set(id string, mod func(*contracts.Submission)) contracts.Submission {
	h.t.Helper()
	cur := h.Get(id)
	next := cur
	mod(&next)
	out, err := h.Store.UpdateSubmission(context.Background(), next, cur.Version)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// Transcript returns the session's path root → head as comparable text.
func (h *Harness) Transcript(sessionID string) []string {
	h.t.Helper()
	ctx := context.Background()
	sess, err := h.Store.GetSession(ctx, sessionID)
	if err != nil {
		h.t.Fatal(err)
	}
	nodes, err := h.Store.Path(ctx, sess.Head)
	if err != nil {
		h.t.Fatal(err)
	}
	return Render(nodes)
}

// Render writes each node as one line: its role, then its blocks as
// " text=…", " use=<name><input>" and " result=…" (with "(error)" after a
// failed result).
func Render(nodes []contracts.Node) []string {
	var out []string
	for _, n := range nodes {
		line := string(n.Role) + ":"
		for _, b := range n.Blocks {
			switch b.Type {
			case contracts.BlockText:
				line += " text=" + b.Text
			case contracts.BlockToolUse:
				line += " use=" + b.ToolCall.Name + string(b.ToolCall.Input)
			case contracts.BlockToolResult:
				line += " result=" + b.ToolResult.Content
				if b.ToolResult.IsError {
					line += "(error)"
				}
			}
		}
		out = append(out, line)
	}
	return out
}

// File returns the content of name in the session's workspace, or "" if it
// cannot be read.
func (h *Harness) File(sessionID, name string) string {
	b, err := os.ReadFile(filepath.Join(h.SandboxDir, sessionID, name))
	if err != nil {
		return ""
	}
	return string(b)
}

// Lose receives every visible message of q and deletes it unhandled.
func (h *Harness) Lose(q string) int {
	h.t.Helper()
	ctx := context.Background()
	n := 0
	for {
		ds, err := h.Store.Receive(ctx, q, 10, time.Hour)
		if err != nil {
			h.t.Fatal(err)
		}
		if len(ds) == 0 {
			return n
		}
		for _, d := range ds {
			if err := h.Store.Delete(ctx, q, d.Receipt); err != nil {
				h.t.Fatal(err)
			}
			n++
		}
	}
}

// Queued returns the visible messages of q, leaving them visible.
func (h *Harness) Queued(q string) []contracts.Message {
	h.t.Helper()
	ctx := context.Background()
	ds, err := h.Store.Receive(ctx, q, 100, time.Hour)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []contracts.Message
	for _, d := range ds {
		out = append(out, d.Message)
		if err := h.Store.Release(ctx, q, d.Receipt); err != nil {
			h.t.Fatal(err)
		}
	}
	return out
}

// Repair runs one repair pass.
func (h *Harness) Repair() repair.Report {
	h.t.Helper()
	r, err := h.RT.Repair.Run(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// testLog reports warnings and errors through the test log, so an
// unexpected handler failure is visible in a failing test's output.
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
