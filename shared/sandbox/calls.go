package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandboxproto"
)

// DefaultMaxCalls bounds the call ledger: the outcomes of the most recent
// calls are kept, older ones forgotten (their state becomes unknown).
const DefaultMaxCalls = 1024

// The mutating methods are effect-once (contracts.CallLedger): with a
// CallID and a StateDir, a request runs at most once and a repeat returns
// the recorded outcome.

// WriteFile creates or replaces (or appends to) a file, creating parents;
// effect-once per CallID.
func (l *Local) WriteFile(ctx context.Context, r contracts.WriteFileRequest) error {
	_, err := once(ctx, l, "write_file", r.CallID, r, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, l.writeFile(ctx, r)
	})
	return err
}

// EditFile replaces Old with New (exactly once unless All); effect-once
// per CallID.
func (l *Local) EditFile(ctx context.Context, r contracts.EditFileRequest) (contracts.EditFileResult, error) {
	return once(ctx, l, "edit_file", r.CallID, r, func(ctx context.Context) (contracts.EditFileResult, error) {
		return l.editFile(ctx, r)
	})
}

// Exec runs a command (see exec); effect-once per CallID.
func (l *Local) Exec(ctx context.Context, r contracts.ExecRequest) (contracts.ExecResult, error) {
	return once(ctx, l, "exec", r.CallID, r, func(ctx context.Context) (contracts.ExecResult, error) {
		return l.exec(ctx, r)
	})
}

// RunScript runs a script (see runScript); effect-once per CallID.
func (l *Local) RunScript(ctx context.Context, r contracts.RunScriptRequest) (contracts.ExecResult, error) {
	return once(ctx, l, "run_script", r.CallID, r, func(ctx context.Context) (contracts.ExecResult, error) {
		return l.runScript(ctx, r)
	})
}

// CallOutcome reports what the ledger knows of callID: running now, done
// (with the recorded result or error), or unknown.
func (l *Local) CallOutcome(ctx context.Context, callID string) (contracts.CallOutcome, error) {
	if err := ctx.Err(); err != nil {
		return contracts.CallOutcome{}, err
	}
	out := contracts.CallOutcome{CallID: callID, State: contracts.CallUnknown}
	if l.calls == nil || callID == "" {
		return out, nil
	}
	l.calls.mu.Lock()
	_, running := l.calls.flights[callID]
	l.calls.mu.Unlock()
	if running {
		out.State = contracts.CallRunning
		return out, nil
	}
	rec, ok, err := l.calls.read(callID)
	if err != nil || !ok {
		return out, err
	}
	return rec.outcome(), nil
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
// atomically), keeping the newest max. A call in flight is a channel that
// closes when its record is written, so a concurrent repeat waits for it.
type ledger struct {
	dir     string
	max     int
	mu      sync.Mutex
	flights map[string]chan struct{}
}

func newLedger(dir string, max int) (*ledger, error) {
	if max <= 0 {
		max = DefaultMaxCalls
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating call ledger %s: %w", dir, err)
	}
	return &ledger{dir: dir, max: max, flights: map[string]chan struct{}{}}, nil
}

func (g *ledger) path(callID string) string {
	sum := sha256.Sum256([]byte(callID))
	return filepath.Join(g.dir, hex.EncodeToString(sum[:])+".json")
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
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
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
	g.evict()
	return nil
}

// evict removes the oldest records (by modification time) beyond max.
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
		os.Remove(filepath.Join(g.dir, all[i].name))
	}
}

// once runs a mutating call at most once per callID. Without a ledger or a
// call id it just runs. A repeat (even concurrent) with the same id and
// request returns the recorded outcome; with a different request it is
// ErrConflict. A call stopped by its context is not recorded: whether it
// took effect is unknown.
func once[T any](ctx context.Context, l *Local, method, callID string, req any, run func(context.Context) (T, error)) (T, error) {
	var zero T
	g := l.calls
	if g == nil || callID == "" {
		return run(ctx)
	}
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return zero, err
	}
	sum := sha256.Sum256(reqJSON)
	hash := hex.EncodeToString(sum[:])
	for {
		g.mu.Lock()
		wait, running := g.flights[callID]
		if !running {
			rec, ok, err := g.read(callID)
			if err != nil || ok {
				g.mu.Unlock()
				if err != nil {
					return zero, err
				}
				return replay[T](rec, method, hash)
			}
			g.flights[callID] = make(chan struct{})
			g.mu.Unlock()
			break
		}
		g.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
	defer func() {
		g.mu.Lock()
		close(g.flights[callID])
		delete(g.flights, callID)
		g.mu.Unlock()
	}()
	res, runErr := run(ctx)
	if runErr != nil && ctx.Err() != nil {
		return res, runErr
	}
	rec := callRecord{CallID: callID, Method: method, Request: hash}
	if runErr != nil {
		code, _ := sandboxproto.Code(runErr)
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
		return out, sandboxproto.Err(rec.Error.Code, rec.Error.Message)
	}
	if len(rec.Result) > 0 {
		if err := json.Unmarshal(rec.Result, &out); err != nil {
			return out, fmt.Errorf("decoding recorded call %s: %w", rec.CallID, err)
		}
	}
	return out, nil
}
