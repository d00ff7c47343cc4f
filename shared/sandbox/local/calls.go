package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
)

// DefaultMaxCalls bounds the call ledger: the outcomes of the most recent
// calls are kept, older ones forgotten (their state becomes unknown).
const DefaultMaxCalls = 1024

// The mutating methods are effect-once (contracts.CallLedger): with a
// CallID and a StateDir, a request runs at most once and a repeat returns
// the recorded outcome.

// WriteFile creates or replaces (or appends to) a file, creating parents;
// effect-once per CallID.
func (l *Sandbox) WriteFile(ctx context.Context, r contracts.WriteFileRequest) error {
	_, err := once(ctx, l, "write_file", r.CallID, r, func(ctx context.Context) (struct{}, error) {
		if err := l.checkWorkspace(int64(len(r.Content))); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, l.writeFile(ctx, r)
	})
	return err
}

// EditFile replaces Old with New (exactly once unless All); effect-once
// per CallID.
func (l *Sandbox) EditFile(ctx context.Context, r contracts.EditFileRequest) (contracts.EditFileResult, error) {
	return once(ctx, l, "edit_file", r.CallID, r, func(ctx context.Context) (contracts.EditFileResult, error) {
		if err := l.checkWorkspace(max(int64(len(r.New)-len(r.Old)), 0)); err != nil {
			return contracts.EditFileResult{}, err
		}
		return l.editFile(ctx, r)
	})
}

// Exec runs a command (see exec); effect-once per CallID.
func (l *Sandbox) Exec(ctx context.Context, r contracts.ExecRequest) (contracts.ExecResult, error) {
	return once(ctx, l, "exec", r.CallID, r, func(ctx context.Context) (contracts.ExecResult, error) {
		return l.exec(ctx, r)
	})
}

// RunScript runs a script (see runScript); effect-once per CallID.
func (l *Sandbox) RunScript(ctx context.Context, r contracts.RunScriptRequest) (contracts.ExecResult, error) {
	return once(ctx, l, "run_script", r.CallID, r, func(ctx context.Context) (contracts.ExecResult, error) {
		return l.runScript(ctx, r)
	})
}

// CallOutcome reports what the ledger knows of callID: running now (in
// any process sharing the state directory), done (with the recorded result
// or error), or unknown.
func (l *Sandbox) CallOutcome(ctx context.Context, callID string) (contracts.CallOutcome, error) {
	if err := ctx.Err(); err != nil {
		return contracts.CallOutcome{}, err
	}
	out := contracts.CallOutcome{CallID: callID, State: contracts.CallUnknown}
	if l.calls == nil || callID == "" {
		return out, nil
	}
	if err := checkCallID(callID); err != nil {
		return out, err
	}
	running, err := l.calls.running(callID)
	if err != nil || running {
		if running {
			out.State = contracts.CallRunning
		}
		return out, err
	}
	rec, ok, err := l.calls.read(callID)
	if err != nil || !ok {
		return out, err
	}
	return rec.outcome(), nil
}

// MaxCallID bounds a call id (it travels in URLs and file names' hashes).
const MaxCallID = 256

func checkCallID(id string) error {
	if len(id) > MaxCallID {
		return fmt.Errorf("call id of %d bytes exceeds %d: %w", len(id), MaxCallID, contracts.ErrInvalid)
	}
	return nil
}

// callRecord is one finished call as stored in the ledger.
type callRecord struct {
	CallID  string               `json:"call_id"`
	Method  string               `json:"method"`
	Request string               `json:"request"` // sha256 of the request JSON
	Result  json.RawMessage      `json:"result,omitempty"`
	Error   *contracts.CallError `json:"error,omitempty"`
}

func (r callRecord) outcome() contracts.CallOutcome {
	return contracts.CallOutcome{CallID: r.CallID, State: contracts.CallDone, Method: r.Method, Result: r.Result, Error: r.Error}
}

// ledger records call outcomes as files in dir (one per call, written
// atomically), keeping about the newest max. A call in flight holds an
// exclusive flock on its lock file, so a repeat — from this process,
// another Sandbox on the same directory, or another sandboxd — waits for it,
// and a lock file that is free but has no record means the runner died.
//
// The directory is made by the first call that takes a lock, not with the
// sandbox: a session whose tools only read (and every sandbox acquired for
// them) makes no directory (on some file systems a mkdir costs more than a
// journal commit).
type ledger struct {
	dir    string
	max    int
	mu     sync.Mutex
	writes int // since the last eviction
}

func newLedger(dir string, max int) (*ledger, error) {
	if max <= 0 {
		max = DefaultMaxCalls
	}
	if dir == "" {
		return nil, fmt.Errorf("creating call ledger: empty directory: %w", contracts.ErrInvalid)
	}
	return &ledger{dir: dir, max: max, writes: max}, nil
}

// ensure makes the ledger's directory if it is not there: on every lock,
// not once, since a provider's sandbox outlives one phase (it is reused)
// and the directory may have been removed since (a stat when it exists).
func (g *ledger) ensure() error {
	if err := os.MkdirAll(g.dir, 0o700); err != nil {
		return fmt.Errorf("creating call ledger %s: %w", g.dir, err)
	}
	return nil
}

func (g *ledger) base(callID string) string {
	sum := sha256.Sum256([]byte(callID))
	return filepath.Join(g.dir, hex.EncodeToString(sum[:]))
}

func (g *ledger) path(callID string) string { return g.base(callID) + ".json" }

// lock takes callID's lock, waiting while another runner holds it or until
// ctx ends. The caller closes the file to release it.
func (g *ledger) lock(ctx context.Context, callID string) (*os.File, error) {
	if err := g.ensure(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(g.base(callID)+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking call %s: %w", callID, err)
	}
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking call %s: %w", callID, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// running reports whether some runner holds callID's lock now. A free
// lock whose file still names a command's processes was held by a runner
// that died mid-call: what it left running is killed first (reapLeft).
func (g *ledger) running(callID string) (bool, error) {
	f, err := os.OpenFile(g.base(callID)+".lock", os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK), nil
	}
	reapLeft(f)
	unlock(f)
	return false, nil
}

// unlock releases a call's lock and closes its file. The lock is released
// explicitly, not by the close alone: a process another goroutine is
// forking holds a copy of every descriptor until it execs (close-on-exec
// closes it only then), and a flock belongs to the open file, so a close
// alone can leave the lock held for that instant — a CallOutcome right
// after the call returned would say "running".
func unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

// startRecord is what a running command's call writes into its lock file
// (which it holds locked): how to find its processes again if the runner
// dies — its cgroups, else its process group and start time.
type startRecord struct {
	Pgid    int      `json:"pgid"`
	Start   uint64   `json:"start"` // clock ticks since boot, /proc/pid/stat
	Cgroups []string `json:"cgroups,omitempty"`
}

type startKey struct{}

// startRecorder returns the function a command calls once started to
// record its startRecord, or nil outside a ledgered call.
func startRecorder(ctx context.Context) func(startRecord) {
	f, _ := ctx.Value(startKey{}).(func(startRecord))
	return f
}

// recordStart stores rec in the (locked) lock file f.
func recordStart(f *os.File, rec startRecord) {
	b, _ := json.Marshal(rec)
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt(b, 0)
	}
}

// reapLeft kills what the start record in lock file f (locked by the
// caller) names — a call whose runner died before it ended — and clears
// the record. A call that ended normally cleared it itself.
func reapLeft(f *os.File) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	if err != nil || len(b) == 0 {
		return
	}
	var rec startRecord
	if json.Unmarshal(b, &rec) == nil {
		for _, dir := range rec.Cgroups {
			killGroup(dir)
		}
		if len(rec.Cgroups) == 0 {
			killLeftGroup(rec.Pgid, rec.Start)
		}
	}
	_ = f.Truncate(0)
}

func (g *ledger) read(callID string) (callRecord, bool, error) {
	b, err := os.ReadFile(g.path(callID))
	if errors.Is(err, os.ErrNotExist) {
		return callRecord{}, false, nil
	}
	if err != nil {
		return callRecord{}, false, fmt.Errorf("reading call %s: %w", callID, err)
	}
	var rec callRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return callRecord{}, false, fmt.Errorf("decoding call %s: %w", callID, err)
	}
	return rec, true, nil
}

// write stores rec (temp file + rename) and forgets the oldest records
// beyond max.
func (g *ledger) write(rec callRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(g.dir, ".call-*")
	if err != nil {
		return fmt.Errorf("recording call %s: %w", rec.CallID, err)
	}
	// No fsync: like the embedded journal (WAL, synchronous=NORMAL) the
	// record survives the process dying, which is the failure it guards
	// against; a host crash takes a Fargate task's workspace with it.
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), g.path(rec.CallID))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("recording call %s: %w", rec.CallID, err)
	}
	g.mu.Lock()
	g.writes++
	due := g.writes >= max(g.max/8, 1)
	if due {
		g.writes = 0
	}
	g.mu.Unlock()
	if due {
		g.evict()
	}
	return nil
}

// evict removes the oldest records (by modification time) beyond max, and
// their lock files. It runs every max/8 writes, so the ledger holds at most
// max + max/8 records.
func (g *ledger) evict() {
	ents, err := os.ReadDir(g.dir)
	if err != nil || len(ents) <= g.max {
		return
	}
	type aged struct {
		name string
		at   int64
	}
	var all []aged
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && filepath.Ext(e.Name()) == ".json" {
			all = append(all, aged{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return int(min(max(a.at-b.at, -1), 1)) })
	for i := 0; i < len(all)-g.max; i++ {
		name := filepath.Join(g.dir, all[i].name)
		os.Remove(name)
		os.Remove(strings.TrimSuffix(name, ".json") + ".lock")
	}
}

// once runs a mutating call at most once per callID. Without a call id it
// just runs; without a ledger it runs where CancelCall can stop it. A
// repeat (even concurrent, even from another process on the same state
// directory) with the same id and request returns the recorded outcome;
// with a different request it is ErrConflict. Only finished outcomes are
// recorded, and a call CancelCall stopped counts as finished (cancelled): a
// call stopped by its context, or failing for a reason of the host's own
// (no sentinel), stays unknown, so a retry may run it.
func once[T any](ctx context.Context, l *Sandbox, method, callID string, req any, run func(context.Context) (T, error)) (T, error) {
	var zero T
	g := l.calls
	if callID == "" {
		return run(ctx)
	}
	if g == nil {
		ctx, end := l.track(ctx, callID)
		defer end()
		return run(ctx)
	}
	if err := checkCallID(callID); err != nil {
		return zero, err
	}
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return zero, err
	}
	sum := sha256.Sum256(reqJSON)
	hash := hex.EncodeToString(sum[:])
	lock, err := g.lock(ctx, callID)
	if err != nil {
		return zero, err
	}
	var end func() // after the lock is released: CancelCall returns when CallOutcome says done
	defer func() {
		_ = lock.Truncate(0) // the command's processes are gone (run killed them)
		unlock(lock)
		if end != nil {
			end()
		}
	}()
	if rec, ok, err := g.read(callID); err != nil || ok {
		if err != nil {
			return zero, err
		}
		return replay[T](rec, method, hash)
	}
	reapLeft(lock) // a previous runner of this call died mid-call
	ctx, end = l.track(ctx, callID)
	ctx = context.WithValue(ctx, startKey{}, func(rec startRecord) { recordStart(lock, rec) })
	res, runErr := run(ctx)
	if runErr != nil && ctx.Err() != nil && !cancelRequested(ctx) {
		return res, runErr // stopped by its caller: the outcome stays unknown
	}
	rec := callRecord{CallID: callID, Method: method, Request: hash}
	if runErr != nil {
		code, _ := proto.Code(runErr)
		if code == proto.CodeInternal {
			return res, runErr
		}
		rec.Error = &contracts.CallError{Code: code, Message: runErr.Error()}
	} else if rec.Result, err = json.Marshal(res); err != nil {
		return res, err
	}
	if err := g.write(rec); err != nil {
		return res, err
	}
	return res, runErr
}

// replay returns a recorded outcome as the method's result or error.
func replay[T any](rec callRecord, method, hash string) (T, error) {
	var out T
	if rec.Method != method || rec.Request != hash {
		return out, fmt.Errorf("call %s was recorded for a different %s request: %w", rec.CallID, rec.Method, contracts.ErrConflict)
	}
	if rec.Error != nil {
		return out, proto.Err(rec.Error.Code, rec.Error.Message)
	}
	if len(rec.Result) > 0 {
		if err := json.Unmarshal(rec.Result, &out); err != nil {
			return out, fmt.Errorf("decoding recorded call %s: %w", rec.CallID, err)
		}
	}
	return out, nil
}
