// Package embedded is the local backend: one data directory holding a
// SQLite file (journal, transcript, streams, events, queue) and the
// sessions' sandbox directories, owned by one process at a time (a lock
// file). It makes the ports and hands them to the construction seam,
// runtime.Assemble. Because it is the only owner, a new boot treats every
// lease it finds as dead: it breaks them, releases in-flight queue
// messages and re-drives every unfinished submission at once.
//
// # Usage
//
//	rt, err := embedded.New(ctx, embedded.Config{DataDir: dir, Env: os.Environ()})
//	defer rt.Close()
//	go rt.Serve(ctx)
package embedded

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
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

// Config of the embedded backend.
type Config struct {
	DataDir string
	// Env is the base environment for sandboxed commands (scrubbed of the
	// runtime's secrets by the sandbox).
	Env []string
	// Sandbox tunes the local sandboxes (timeouts, caps).
	Sandbox sandbox.Options
	// Models adds or replaces model providers ("scripted" is built in).
	Models map[string]contracts.ModelClient
	// Runtime is passed to runtime.Assemble; Owner is filled in.
	Runtime runtime.Config
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// New opens (or creates) the data directory and assembles the runtime.
func New(ctx context.Context, cfg Config) (*runtime.Runtime, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("embedded backend: DataDir is required")
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
	sbOpts := cfg.Sandbox
	sbOpts.Env = cfg.Env
	models := map[string]contracts.ModelClient{"scripted": scripted.New()}
	for k, v := range cfg.Models {
		models[k] = v
	}
	clock := wallClock{}
	ports := runtime.Ports{
		Journal: store, Transcript: store, Streams: store, Events: store, Queue: store,
		Sandboxes: sandbox.NewProvider(filepath.Join(cfg.DataDir, "sandboxes"), sbOpts),
		Registry:  tools.NewRegistry(), Models: models, Clock: clock, IDs: ids.New(clock),
		Close: func() error { return errors.Join(store.Close(), lock.Close()) },
	}
	rc := cfg.Runtime
	rc.Owner = "boot_" + randHex(6)
	rt, err := runtime.Assemble(ports, rc)
	if err != nil {
		ports.Close()
		return nil, err
	}
	if err := recoverBoot(ctx, rt, store); err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}

// recoverBoot re-drives whatever a previous process left unfinished.
func recoverBoot(ctx context.Context, rt *runtime.Runtime, store *sqlite.Store) error {
	n, err := rt.Repair.BreakForeignLeases(ctx, rt.Owner)
	if err != nil {
		return fmt.Errorf("boot recovery: %w", err)
	}
	if err := store.ReleaseInflight(ctx); err != nil {
		return fmt.Errorf("boot recovery: %w", err)
	}
	eager := &repair.Repairer{Engine: rt.Engine, StuckAfter: time.Nanosecond}
	rep, err := eager.Run(ctx)
	if err != nil {
		return fmt.Errorf("boot recovery: %w", err)
	}
	if n+rep.Redriven+rep.Started+rep.Failed+rep.Poison > 0 {
		rt.Log.Info("boot recovery", "leases_broken", n, "redriven", rep.Redriven, "started", rep.Started, "failed", rep.Failed, "poison", rep.Poison)
	}
	return nil
}

type dirLock struct{ f *os.File }

func (l dirLock) Close() error { return l.f.Close() } // closing drops the flock

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

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Logger is the default JSON logger of the embedded binaries.
func Logger(w *os.File, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
