package repair_test

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
	"github.com/cairnrun/cairn/shared/repair"
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
	t       *testing.T
	rt      *runtime.Runtime
	store   *sqlite.Store
	clock   *manualClock
	sandbox string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	clock := &manualClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store, err := sqlite.Open(filepath.Join(dir, "cairn.db"), sqlite.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ports := runtime.Ports{
		Journal: store, Transcript: store, Streams: store, Events: store, Queue: store,
		Sandboxes: sandbox.NewProvider(filepath.Join(dir, "sandboxes"), sandbox.Options{Env: []string{"PATH=" + os.Getenv("PATH")}}),
		Registry:  tools.NewRegistry(), Models: map[string]contracts.ModelClient{"scripted": scripted.New()},
		Clock: clock, IDs: ids.New(clock),
	}
	log := slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt, err := runtime.Assemble(ports, runtime.Config{Owner: "test", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, rt: rt, store: store, clock: clock, sandbox: filepath.Join(dir, "sandboxes")}
}

type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (h *harness) session(spec contracts.SessionSpec) contracts.Session {
	h.t.Helper()
	for _, d := range tools.NewRegistry().Definitions() {
		spec.Tools = append(spec.Tools, contracts.ToolConfig{Name: d.Name})
	}
	s, err := h.rt.Engine.CreateSession(context.Background(), "test", spec)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// accept submits a prompt to a new session running model.
func (h *harness) accept(model string) contracts.Submission {
	h.t.Helper()
	s := h.session(contracts.SessionSpec{Model: model})
	sub, _, err := h.rt.Engine.Accept(context.Background(), s.ID, "hello", "")
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

// lose receives every visible message of q and deletes it unhandled.
func (h *harness) lose(q string) int {
	h.t.Helper()
	ctx := context.Background()
	n := 0
	for {
		ds, err := h.store.Receive(ctx, q, 10, time.Hour)
		if err != nil {
			h.t.Fatal(err)
		}
		if len(ds) == 0 {
			return n
		}
		for _, d := range ds {
			if err := h.store.Delete(ctx, q, d.Receipt); err != nil {
				h.t.Fatal(err)
			}
			n++
		}
	}
}

// queued returns the visible messages of q, leaving them visible.
func (h *harness) queued(q string) []contracts.Message {
	h.t.Helper()
	ctx := context.Background()
	ds, err := h.store.Receive(ctx, q, 100, time.Hour)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []contracts.Message
	for _, d := range ds {
		out = append(out, d.Message)
		if err := h.store.Release(ctx, q, d.Receipt); err != nil {
			h.t.Fatal(err)
		}
	}
	return out
}

func (h *harness) get(id string) contracts.Submission {
	h.t.Helper()
	s, err := h.store.GetSubmission(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// set rewrites the stored submission through mod (a conditional write).
func (h *harness) set(id string, mod func(*contracts.Submission)) contracts.Submission {
	h.t.Helper()
	cur := h.get(id)
	next := cur
	mod(&next)
	out, err := h.store.UpdateSubmission(context.Background(), next, cur.Version)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func (h *harness) repair() repair.Report {
	h.t.Helper()
	r, err := h.rt.Repair.Run(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}
