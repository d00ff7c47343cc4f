package crashpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/testkit/crashpoint"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/tools"
	"github.com/cairnrun/cairn/shared/turn"
)

// scenario is one turn the crash test kills at every write point.
type scenario struct {
	name     string
	spec     contracts.SessionSpec
	decide   contracts.Decision // answer to a parked approval; "" = none expected
	cancel   bool               // cancel the turn once it is parked (instead of deciding)
	want     contracts.Phase
	wantErr  string
	mutating []string // workspace files a mutating tool appends one line to
	prompt   string   // the turn's prompt; "" = the constant prompt
	// mcp: the session declares the matrix's MCP server (mcpServer), whose
	// mutating tool must be sent at most once per run.
	mcp bool
	// focus, when set, picks write points of the reference run that are
	// crashed at on every backend, whatever its stride.
	focus func([]crashpoint.Point) []int
}

// text is the scenario's prompt.
func (sc scenario) text() string {
	if sc.prompt == "" {
		return prompt
	}
	return sc.prompt
}

var scenarios = []scenario{
	{name: "plain", spec: contracts.SessionSpec{Model: "scripted:plain"}, want: contracts.PhaseCommitted},
	{name: "demo", spec: contracts.SessionSpec{Model: "scripted:demo"}, want: contracts.PhaseCommitted},
	{name: "multi", spec: contracts.SessionSpec{Model: "scripted:multi"}, want: contracts.PhaseCommitted, mutating: []string{"log.txt"}},
	{name: "approval-allow", spec: contracts.SessionSpec{Model: "scripted:approval", Policy: askBash()}, decide: contracts.Allow,
		want: contracts.PhaseCommitted, mutating: []string{"approved.txt"}},
	{name: "approval-deny", spec: contracts.SessionSpec{Model: "scripted:approval", Policy: askBash()}, decide: contracts.Deny,
		want: contracts.PhaseCommitted, mutating: []string{"approved.txt"}},
	{name: "approval-cancel", spec: contracts.SessionSpec{Model: "scripted:approval", Policy: askBash()}, cancel: true,
		want: contracts.PhaseCancelled, wantErr: "cancelled by system: " + cancelReason, mutating: []string{"approved.txt"}},
	{name: "limit", spec: contracts.SessionSpec{Model: "scripted:loop", Limits: contracts.Limits{MaxSteps: 3}},
		want: contracts.PhaseFailed, wantErr: "limit_tripped:steps"},
	// One call of a mutating MCP tool on a real server over HTTP: started
	// marker first, never re-sent after a crash.
	{name: "mcp", spec: contracts.SessionSpec{Model: "scripted:call"}, prompt: mcpPrompt, mcp: true, focus: callWrites,
		want: contracts.PhaseCommitted},
}

func askBash() contracts.Policy {
	return contracts.Policy{Tools: map[string]contracts.Decision{"bash": contracts.Ask}}
}

const (
	cancelReason = "the crash test cancels it"
	prompt       = "hello crash"
	idemKey      = "crash-key-1"
	// maxRounds bounds the "process died: advance, repair, drain" loop. One
	// crash needs one round; the bound stays far below the default wall
	// limit (each round moves the clock by turn.DefaultLeaseTTL+1m).
	maxRounds = 3
)

// world is one run's assembled runtime on some backend.
type world struct {
	rt      *assemble.Runtime // its ports wrapped by the run's plan
	clock   *enginetest.ManualClock
	model   *scripted.Client
	queue   contracts.Queue // the unwrapped queue, for the orphan check
	sandbox string          // holds one workspace directory per session id
	// lapse, when set, makes the messages the dead process left in flight
	// visible again: a queue whose visibility timeout runs on real time
	// does not see the clock move.
	lapse func()
	mcp   *mcpServer // the matrix's MCP server (runMatrix sets it)
}

// backend builds worlds for the scenario runner.
type backend struct {
	name string
	// parallel is how many runs of one scenario overlap.
	parallel int
	// stride s: the runner crashes at points 1, 1+s, 1+2s, … and always at
	// the last one; 1 = every point.
	stride int
	// start prepares the backend once per matrix (it may skip t) and
	// returns its world factory.
	start func(t *testing.T) opener
}

// opener assembles a fresh world whose ports are wrapped by plan; the
// world's resources are released when t ends.
type opener func(t *testing.T, plan *crashpoint.Plan) *world

// advance moves the world's clock by d, past the dead process's lease and
// its messages' visibility timeout.
func (w *world) advance(d time.Duration) {
	w.clock.Advance(d)
	if w.lapse != nil {
		w.lapse()
	}
}

func (w *world) session(t *testing.T, spec contracts.SessionSpec) contracts.Session {
	t.Helper()
	if spec.Tools == nil {
		spec.Tools = enginetest.AllTools()
	}
	s, err := w.rt.Engine.CreateSession(context.Background(), "test", spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (w *world) get(t *testing.T, id string) contracts.Submission {
	t.Helper()
	s, err := w.rt.Ports.Journal.GetSubmission(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (w *world) file(sessionID, name string) string {
	b, err := os.ReadFile(filepath.Join(w.sandbox, sessionID, name))
	if err != nil {
		return ""
	}
	return string(b)
}

// outcome is what one run of a scenario left behind.
type outcome struct {
	phase      contracts.Phase
	err        string
	transcript []string
	calls      int64
	files      map[string]string
	mcpCalls   []string // effect ids of the calls the MCP server got from this run's session
	fired      crashpoint.Point
	crashed    bool
	writes     int
	problems   []string // violations found while driving or checking
}

func (o *outcome) fail(format string, args ...any) {
	o.problems = append(o.problems, fmt.Sprintf(format, args...))
}

// run drives sc once under plan: submit, drain, decide when parked, and, as
// long as the turn is not terminal, let the dead process's lease and
// visibility timeout lapse, repair and drain again.
func run(t *testing.T, open opener, sc scenario, plan *crashpoint.Plan) outcome {
	t.Helper()
	var o outcome
	h := open(t, plan)
	ctx := context.Background()

	spec := sc.spec
	if sc.mcp {
		spec.MCP = h.mcp.spec()
	}
	plan.Pause()
	sess := h.session(t, spec)
	plan.Resume()

	// Accept; a crash inside it is a 5xx, which a client retries with the
	// same idempotency key.
	var sub contracts.Submission
	accepted := false
	for range 3 {
		var err error
		if crashpoint.Recover(func() { sub, _, err = h.rt.Engine.Accept(ctx, sess.ID, sc.text(), idemKey) }) {
			continue
		}
		if err != nil {
			t.Fatalf("accept: %v", err)
		}
		accepted = true
		break
	}
	if !accepted {
		t.Fatal("accept kept crashing")
	}

	drain(t, h)
	for round := 0; ; round++ {
		cur := h.get(t, sub.ID)
		if cur.Phase.Terminal() {
			break
		}
		if sc.decide != "" && decidePending(t, h, sess.ID, cur, sc.decide) {
			drain(t, h)
			continue
		}
		if sc.cancel && cancelParked(t, h, cur) {
			drain(t, h)
			continue
		}
		if round >= maxRounds {
			o.fail("not terminal after %d repair rounds: phase %s step %d", round, cur.Phase, cur.Step)
			break
		}
		// The crashed process is gone: its lease and its in-flight message's
		// visibility timeout lapse, then a repair pass runs.
		h.advance(turn.DefaultLeaseTTL + time.Minute)
		var rep struct{ poison int }
		crashpoint.Recover(func() {
			r, err := h.rt.Repair.Run(ctx)
			if err != nil {
				t.Logf("repair: %v", err)
			}
			rep.poison = r.Poison
		})
		if rep.poison > 0 {
			o.fail("repair found %d dead-lettered messages", rep.poison)
		}
		drain(t, h)
	}

	final := h.get(t, sub.ID)
	o.phase, o.err = final.Phase, final.Error
	o.calls = h.model.Calls()
	o.writes = plan.Count()
	o.fired, o.crashed = plan.Fired()

	// Nothing the user submitted is lost.
	if final.Prompt != sc.text() || final.IdempotencyKey != idemKey {
		o.fail("submission lost its prompt or key: %q %q", final.Prompt, final.IdempotencyKey)
	}
	if subs, err := h.rt.Ports.Journal.ListSubmissions(ctx, sess.ID, "", 10); err != nil || len(subs) != 1 {
		o.fail("%d submissions in the session, want 1 (%v)", len(subs), err)
	}
	path, err := h.rt.Ports.Transcript.Path(ctx, final.Leaf)
	if err != nil {
		o.fail("reading path to leaf %q: %v", final.Leaf, err)
	}
	userID := ids.Node(sub.ID, 0, contracts.RoleUser)
	if !slices.ContainsFunc(path, func(n contracts.Node) bool { return n.ID == userID }) {
		o.fail("user node %s not in the path", userID)
	}
	o.transcript = enginetest.Render(path)
	if final.Phase == contracts.PhaseCommitted {
		if s, err := h.rt.Ports.Journal.GetSession(ctx, sess.ID); err != nil || s.Head != final.Leaf || s.Active != "" {
			o.fail("session after commit: head %q active %q, want head %q active \"\" (%v)", s.Head, s.Active, final.Leaf, err)
		}
	} else if final.Phase.Terminal() {
		// A cancel frees the session before it ends the turn; a failure
		// after (a crash between leaves Active naming the FAILED turn,
		// which StartNext treats as free).
		s, err := h.rt.Ports.Journal.GetSession(ctx, sess.ID)
		free := s.Active == "" || (final.Phase == contracts.PhaseFailed && s.Active == final.ID)
		if err != nil || !free || s.Head == final.Leaf {
			o.fail("session after %s: head %q active %q, want the head not moved to %q and active \"\" (%v)", final.Phase, s.Head, s.Active, final.Leaf, err)
		}
	}
	o.files = map[string]string{}
	for _, f := range sc.mutating {
		o.files[f] = h.file(sess.ID, f)
	}
	if sc.mcp {
		o.mcpCalls = h.mcp.calls(sess.ID)
		if i := slices.Index(o.mcpCalls, ""); i >= 0 {
			o.fail("MCP call %d of %d carried no %s in _meta", i+1, len(o.mcpCalls), tools.MetaEffectID)
		}
	}

	// No orphan queue message: once a redelivered message has had its
	// chance to run, every queue and dead-letter queue stays empty.
	// (An orphan is deleted once seen: a backend may reuse its queues for
	// the next run.)
	h.advance(2 * time.Minute)
	drain(t, h)
	h.advance(2 * time.Minute)
	for _, q := range h.rt.Workers.Queues {
		for _, name := range []string{q, contracts.DLQ(q)} {
			ds, err := h.queue.Receive(ctx, name, 10, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				o.fail("orphan message in %s: %+v (received %d times)", name, d.Message, d.ReceiveCount)
				if err := h.queue.Delete(ctx, name, d.Receipt); err != nil {
					t.Logf("deleting orphan: %v", err)
				}
			}
		}
	}
	if h.get(t, sub.ID).Phase != final.Phase {
		o.fail("phase moved after terminal: %s → %s", final.Phase, h.get(t, sub.ID).Phase)
	}
	return o
}

// decidePending answers every pending approval of a parked submission,
// retrying (like a client after a 5xx) when the crash hits the decision. It
// reports whether there was one.
func decidePending(t *testing.T, h *world, sessionID string, sub contracts.Submission, d contracts.Decision) bool {
	t.Helper()
	if sub.Phase != contracts.PhaseTools {
		return false
	}
	found := false
	for _, a := range sub.Approvals {
		if a.Decision != "" {
			continue
		}
		found = true
		for try := 0; ; try++ {
			var err error
			if crashpoint.Recover(func() { _, err = h.rt.Engine.Decide(context.Background(), sessionID, a.ID, d, "") }) && try < 2 {
				continue
			}
			if err != nil {
				t.Fatalf("deciding %s: %v", a.ID, err)
			}
			break
		}
	}
	return found
}

// cancelParked cancels a parked submission whose cancel is not recorded
// yet, as a client does — again after a 5xx when the crash lost the
// request. A crash after the request was recorded is left to repair, which
// must finish it. It reports whether it asked.
func cancelParked(t *testing.T, h *world, sub contracts.Submission) bool {
	t.Helper()
	if sub.Phase != contracts.PhaseTools || sub.Cancel != nil || len(sub.Approvals) == 0 {
		return false
	}
	var err error
	if crashpoint.Recover(func() { _, err = h.rt.Engine.Cancel(context.Background(), sub.SessionID, sub.ID, cancelReason) }) {
		return true
	}
	if err != nil {
		t.Fatalf("cancelling %s: %v", sub.ID, err)
	}
	return true
}

// drain handles queued messages until every queue is empty, like
// enginetest.Harness.Drain, but survives a crash outside the handler (in the
// worker's Delete): the rest of that batch stays in flight, as it would when
// the process dies.
func drain(t *testing.T, h *world) {
	t.Helper()
	ctx := context.Background()
	for range 1000 {
		n := 0
		for _, q := range h.rt.Workers.Queues {
			var got int
			var err error
			if crashpoint.Recover(func() { got, err = h.rt.Workers.Once(ctx, q, 10) }) {
				got = 1
			}
			if err != nil {
				t.Fatal(err)
			}
			n += got
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("queues never drained")
}

// inStream reports whether the crash fell inside a model stream before its
// completion marker was durable (written, and its batch committed), so the
// model step is legitimately called again.
func inStream(p crashpoint.Point) bool {
	if p.InBatch && slices.Contains(p.Batched, "Complete") {
		return true // the completion is in the same batch: not durable until its commit
	}
	switch p.Op {
	case "PutChunks":
		return true
	case "AppendEvents":
		return strings.HasPrefix(p.Key, "step/") || strings.HasPrefix(p.Key, "text/")
	case "Complete":
		return p.Before || p.InBatch // inside a batch, not durable until its commit
	case "Batch": // a stream's flush, or its completion: lost unless committed
		ops := strings.Split(p.Key, ",")
		if slices.Contains(ops, "Complete") {
			return p.Before
		}
		return slices.Contains(ops, "PutChunks")
	}
	return false
}

// callWrites picks the writes of a tool call itself: its started marker,
// its result, their events, and a batch committing either. A crash at one
// of them is where a call could be re-sent: the marker durable or not, the
// result lost or kept.
func callWrites(pts []crashpoint.Point) []int {
	var ks []int
	for _, p := range pts {
		ops := []string{p.Op}
		if p.Op == "Batch" {
			ops = strings.Split(p.Key, ",")
		}
		call := slices.Contains(ops, "MarkToolStarted") || slices.Contains(ops, "PutToolResult") ||
			(p.Op == "AppendEvents" && (strings.HasPrefix(p.Key, "tool_started/") || strings.HasPrefix(p.Key, "tool_finished/")))
		if call {
			ks = append(ks, p.N)
		}
	}
	return ks
}

// check compares a crashed run with the reference run.
func check(sc scenario, ref, got outcome) (probs []string, interrupted bool) {
	probs = append(probs, got.problems...)
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if got.phase != sc.want || got.err != sc.wantErr {
		bad("ended %s %q, want %s %q", got.phase, got.err, sc.want, sc.wantErr)
	}
	wantCalls := ref.calls
	if got.crashed && inStream(got.fired) {
		wantCalls++
	}
	if got.calls != wantCalls {
		bad("model called %d times, want %d", got.calls, wantCalls)
	}
	interrupted = false
	if len(got.transcript) != len(ref.transcript) {
		bad("transcript has %d nodes, want %d:\n%s", len(got.transcript), len(ref.transcript), strings.Join(got.transcript, "\n"))
	} else {
		for i := range got.transcript {
			if got.transcript[i] == ref.transcript[i] {
				continue
			}
			if strings.Contains(got.transcript[i], "interrupted") {
				interrupted = true
				continue
			}
			// The interrupted call's effect is unknown, so the tool results
			// that depend on it may differ; the model's steps may not.
			if interrupted && strings.HasPrefix(got.transcript[i], string(contracts.RoleTool)+":") {
				continue
			}
			bad("transcript node %d:\n got %s\nwant %s", i, got.transcript[i], ref.transcript[i])
		}
	}
	for f, content := range got.files {
		lines := strings.Count(content, "\n")
		switch {
		case lines > 1:
			bad("mutating tool ran %d times (%s)", lines, f)
		case !interrupted && content != ref.files[f]:
			bad("%s is %q, want %q (no call was interrupted)", f, content, ref.files[f])
		}
	}
	if sc.mcp {
		// Sent once, or (when its outcome is reported unknown) possibly not
		// at all; never again after a crash, whatever its effect id.
		switch n := len(got.mcpCalls); {
		case n > 1:
			bad("mutating MCP call sent %d times (effect ids %q)", n, got.mcpCalls)
		case !interrupted && n != len(ref.mcpCalls):
			bad("mutating MCP call sent %d times, want %d (no call was interrupted)", n, len(ref.mcpCalls))
		}
	}
	return probs, interrupted
}

// row is one line of the reliability table.
type row struct {
	backend, scenario       string
	points, tried           int
	before, after           int
	violations, interrupted int
}

// fullEnv, set to 1, makes every backend crash at every write point.
const fullEnv = "CAIRN_CRASH_FULL"

// crashPoints returns the write numbers 1…n a runner crashes at with
// stride s: 1, 1+s, 1+2s, … and n.
func crashPoints(n, s int) []int {
	if s < 1 || os.Getenv(fullEnv) == "1" {
		s = 1
	}
	var ks []int
	for k := 1; k <= n; k += s {
		ks = append(ks, k)
	}
	if n > 0 && ks[len(ks)-1] != n {
		ks = append(ks, n)
	}
	return ks
}

// rows collects every backend's table lines for report.
var (
	rowsMu sync.Mutex
	rows   []row
)

// TestCrashAtEveryWritePoint runs every scenario on every backend, crashing
// it at each write point (or a stride of them, see backend.stride), and
// checks each crashed run against the backend's reference run.
func TestCrashAtEveryWritePoint(t *testing.T) {
	t.Cleanup(func() { report(t) })
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			runMatrix(t, b)
		})
	}
}

// runMatrix runs every scenario of the crash matrix on backend b.
func runMatrix(t *testing.T, b backend) {
	start := b.start(t)
	srv := startMCPServer(t) // closed after every scenario of the matrix
	open := func(t *testing.T, plan *crashpoint.Plan) *world {
		w := start(t, plan)
		w.mcp = srv
		return w
	}
	var mu sync.Mutex
	mine := make([]row, len(scenarios))
	t.Cleanup(func() {
		rowsMu.Lock()
		rows = append(rows, mine...)
		rowsMu.Unlock()
	})
	for i, sc := range scenarios {
		mine[i] = row{backend: b.name, scenario: sc.name}
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			counter := &crashpoint.Plan{}
			ref := run(t, open, sc, counter)
			if len(ref.problems) > 0 || ref.phase != sc.want || ref.err != sc.wantErr {
				t.Fatalf("reference run: %s %q, problems %v", ref.phase, ref.err, ref.problems)
			}
			if sc.mcp && len(ref.mcpCalls) != 1 {
				t.Fatalf("reference run sent the MCP call %d times, want once:\n%s", len(ref.mcpCalls), strings.Join(ref.transcript, "\n"))
			}
			n := ref.writes
			ks := crashPoints(n, b.stride)
			if sc.focus != nil {
				focus := sc.focus(counter.Points())
				if len(focus) == 0 {
					t.Fatalf("reference run: no write point in focus")
				}
				ks = append(ks, focus...)
				slices.Sort(ks)
				ks = slices.Compact(ks)
			}
			mu.Lock()
			mine[i].points, mine[i].tried = n, len(ks)
			mu.Unlock()
			t.Logf("%s/%s: %d write points (crashing at %d), %d model calls, transcript:\n%s",
				b.name, sc.name, n, len(ks), ref.calls, strings.Join(ref.transcript, "\n"))
			// Each run mostly waits on its store and tool processes, so
			// more runs than CPUs overlap well; t.Parallel would cap them at
			// GOMAXPROCS.
			sem := make(chan struct{}, b.parallel)
			var wg sync.WaitGroup
			for _, k := range ks {
				for _, before := range []bool{true, false} {
					when := "after"
					if before {
						when = "before"
					}
					wg.Add(1)
					sem <- struct{}{}
					// wg.Done only once t.Run returned: all subtests must
					// have finished before this test function returns.
					go func() {
						defer wg.Done()
						defer func() { <-sem }()
						t.Run(fmt.Sprintf("%02d-%s", k, when), func(t *testing.T) {
							got := run(t, open, sc, &crashpoint.Plan{K: k, Before: before})
							probs, interrupted := check(sc, ref, got)
							mu.Lock()
							if before {
								mine[i].before++
							} else {
								mine[i].after++
							}
							if len(probs) > 0 {
								mine[i].violations++
							}
							if interrupted {
								mine[i].interrupted++
							}
							mu.Unlock()
							if !got.crashed {
								t.Errorf("plan %d/%s never fired (%d writes)", k, when, got.writes)
							}
							for _, p := range probs {
								t.Errorf("crash %s write %d (%s %s): %s", when, k, got.fired.Op, got.fired.Key, p)
							}
						})
					}()
				}
			}
			wg.Wait()
		})
	}
}

// report logs the table and, when CAIRN_RELIABILITY_OUT names a file,
// writes it there.
func report(t *testing.T) {
	rowsMu.Lock()
	defer rowsMu.Unlock()
	if len(rows) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| backend | scenario | write points | points tried | crashes before | crashes after | violations | mutating call interrupted |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %d |\n", r.backend, r.scenario, r.points, r.tried, r.before, r.after, r.violations, r.interrupted)
	}
	t.Logf("crash-point injection:\n%s", b.String())
	if out := os.Getenv("CAIRN_RELIABILITY_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Errorf("writing %s: %v", out, err)
		}
	}
}
