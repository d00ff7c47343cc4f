package turn_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/runtime"
	"github.com/cairnrun/cairn/shared/sandbox"
	"github.com/cairnrun/cairn/shared/sqlite"
	"github.com/cairnrun/cairn/shared/tools"
)

// manualClock is a clock tests move by hand.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type harness struct {
	t       testing.TB
	rt      *runtime.Runtime
	store   *sqlite.Store
	model   *scripted.Client
	clock   *manualClock
	sandbox string
}

type option func(*runtime.Ports)

func newHarness(t testing.TB, opts ...option) *harness {
	t.Helper()
	dir := t.TempDir()
	clock := &manualClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store, err := sqlite.Open(filepath.Join(dir, "cairn.db"), sqlite.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	model := scripted.New()
	ports := runtime.Ports{
		Journal: store, Transcript: store, Streams: store, Events: store, Queue: store,
		Sandboxes: sandbox.NewProvider(filepath.Join(dir, "sandboxes"), sandbox.Options{Env: []string{"PATH=" + os.Getenv("PATH")}}),
		Registry:  tools.NewRegistry(), Models: map[string]contracts.ModelClient{"scripted": model},
		Clock: clock, IDs: ids.New(clock),
	}
	for _, o := range opts {
		o(&ports)
	}
	rt, err := runtime.Assemble(ports, runtime.Config{Owner: "test-owner", Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, rt: rt, store: store, model: model, clock: clock, sandbox: filepath.Join(dir, "sandboxes")}
}

func allTools() []contracts.ToolConfig {
	var out []contracts.ToolConfig
	for _, d := range tools.NewRegistry().Definitions() {
		out = append(out, contracts.ToolConfig{Name: d.Name})
	}
	return out
}

func (h *harness) session(spec contracts.SessionSpec) contracts.Session {
	h.t.Helper()
	if spec.Tools == nil {
		spec.Tools = allTools()
	}
	s, err := h.rt.Engine.CreateSession(context.Background(), "test", spec)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) submit(sessionID, prompt string) contracts.Submission {
	h.t.Helper()
	sub, _, err := h.rt.Engine.Accept(context.Background(), sessionID, prompt, "")
	if err != nil {
		h.t.Fatal(err)
	}
	return sub
}

// drain handles queued messages until every queue is empty.
func (h *harness) drain() {
	h.t.Helper()
	ctx := context.Background()
	for range 10000 {
		n := 0
		for _, q := range h.rt.Workers.Queues {
			got, err := h.rt.Workers.Once(ctx, q, 10)
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

func (h *harness) get(id string) contracts.Submission {
	h.t.Helper()
	s, err := h.store.GetSubmission(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// transcript returns the session's path root → head as comparable text.
func (h *harness) transcript(sessionID string) []string {
	h.t.Helper()
	ctx := context.Background()
	sess, err := h.store.GetSession(ctx, sessionID)
	if err != nil {
		h.t.Fatal(err)
	}
	nodes, err := h.store.Path(ctx, sess.Head)
	if err != nil {
		h.t.Fatal(err)
	}
	return render(nodes)
}

func render(nodes []contracts.Node) []string {
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

func (h *harness) file(sessionID, name string) string {
	b, err := os.ReadFile(filepath.Join(h.sandbox, sessionID, name))
	if err != nil {
		return ""
	}
	return string(b)
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
