package proc

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// envBinary hands the built sandboxd to a re-executed test binary.
const envBinary = "SANDBOXPROC_TEST_SANDBOXD"

// sandboxdBin is the real functions/sandboxd, built once per package run.
var sandboxdBin string

func TestMain(m *testing.M) {
	if bin := os.Getenv(envBinary); bin != "" {
		sandboxdBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "proc-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sandboxdBin = filepath.Join(dir, "sandboxd")
	out, err := exec.Command("go", "build", "-o", sandboxdBin, "github.com/cairnrun/cairn/functions/sandboxd").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building sandboxd: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var testKey = bytes.Repeat([]byte("k"), 32)

// world is one journal and one base directory, shared by every provider a
// test makes: providers of one world are "processes" of one deployment.
type world struct {
	t     *testing.T
	store *sqlite.Store
	base  string
	logs  syncBuffer // every provider's log
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newWorld(t *testing.T, sessions ...string) *world {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "cairn.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, id := range sessions {
		if _, err := st.CreateSession(context.Background(), contracts.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	return &world{t: t, store: st, base: filepath.Join(dir, "sandboxes")}
}

// startGuard is the providers' StartTimeout: how long sandboxd may take to
// print its listening line. The default (10s) is a margin a saturated
// machine can reach; this only turns a sandboxd that never starts into a
// failure.
const startGuard = 2 * time.Minute

// provider returns a new Provider of the world, closed at cleanup.
func (w *world) provider(mod ...func(*Config)) *Provider {
	w.t.Helper()
	cfg := Config{
		Binary: sandboxdBin, BaseDir: w.base, Sessions: w.store,
		Tokens:       placement.Tokens{Key: testKey},
		StartTimeout: startGuard,
		Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Log:          slog.New(slog.NewTextHandler(&w.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { p.Close() })
	return p
}

func (w *world) record(id string) *contracts.SandboxRecord {
	w.t.Helper()
	s, err := w.store.GetSession(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	if s.Sandbox == nil {
		w.t.Fatalf("session %s has no sandbox record", id)
	}
	return s.Sandbox
}

// childOf returns the provider's live child recorded by rec, or nil.
func childOf(p *Provider, rec *contracts.SandboxRecord) *child {
	pid, _ := parsePID(rec.ID)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.children[pid]
}

func liveChildren(p *Provider) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.children)
}
