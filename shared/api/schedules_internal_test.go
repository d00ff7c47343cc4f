package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/turn"
)

// These tests call the schedule handlers directly with a principal in the
// request context, so they check ownership and the order of writes apart
// from how authentication finds the principal.

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// schedulerCall is one call the recording Scheduler saw, with what the
// store held for that schedule at that moment.
type schedulerCall struct {
	op          string // create, update, delete
	paused      bool   // the state asked for (update)
	stored      bool   // the store had the schedule
	storePaused bool   // … and had it paused
}

// recorder is a contracts.Scheduler that records each call against the
// store's state, and fails the calls fail names.
type recorder struct {
	store contracts.WorkflowStore
	mu    sync.Mutex
	calls []schedulerCall
	fail  map[string]error
	gone  map[string]bool // schedules the Scheduler no longer has
}

func (r *recorder) record(op, id string, paused bool) error {
	sc, err := r.store.GetSchedule(context.Background(), id)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, schedulerCall{op: op, paused: paused, stored: err == nil, storePaused: sc.Paused})
	if err := r.fail[op]; err != nil {
		return err
	}
	if op == "update" && r.gone[id] {
		return contracts.ErrNotFound
	}
	return nil
}

func (r *recorder) Create(_ context.Context, s contracts.Schedule) error {
	return r.record("create", s.ID, s.Paused)
}
func (r *recorder) Update(_ context.Context, s contracts.Schedule) error {
	return r.record("update", s.ID, s.Paused)
}
func (r *recorder) Delete(_ context.Context, id string) error { return r.record("delete", id, false) }

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recorder) last() schedulerCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[len(r.calls)-1]
}

type scheduleWorld struct {
	s     *server
	store contracts.WorkflowStore
	sched *recorder
	wf    contracts.Workflow
}

var (
	alice    = contracts.Principal{Name: "alice"}
	bob      = contracts.Principal{Name: "bob"}
	operator = contracts.Principal{Name: "ops", Operator: true}
)

func newScheduleWorld(t *testing.T) *scheduleWorld {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := db.Workflows()
	clock := fixedClock{time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	sched := &recorder{store: store, fail: map[string]error{}, gone: map[string]bool{}}
	s := &server{Config: Config{Engine: &turn.Engine{Deps: turn.Deps{Clock: clock}}, Log: slog.New(slog.DiscardHandler), Workflow: WorkflowConfig{
		Store: store, IDs: ids.New(clock), Scheduler: sched,
	}}}
	wf, err := store.CreateWorkflow(context.Background(), contracts.Workflow{ID: "wf_a", Owner: alice.Name, Name: "a", Script: "result = 1"})
	if err != nil {
		t.Fatal(err)
	}
	return &scheduleWorld{s: s, store: store, sched: sched, wf: wf}
}

// call runs handler h as principal p on a request with the path values.
func call(h http.HandlerFunc, p contracts.Principal, method, body string, path ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/", strings.NewReader(body))
	for i := 0; i+1 < len(path); i += 2 {
		r.SetPathValue(path[i], path[i+1])
	}
	r = r.WithContext(contracts.WithPrincipal(r.Context(), p))
	w := httptest.NewRecorder()
	h(w, r)
	return w
}

func (sw *scheduleWorld) create(t *testing.T, p contracts.Principal, wf string) contracts.Schedule {
	t.Helper()
	w := call(sw.s.createSchedule, p, "POST", `{"expression":"rate(5 minutes)","input":{"k":1}}`, "id", wf)
	if w.Code != http.StatusCreated {
		t.Fatalf("create as %s: %d %s", p.Name, w.Code, w.Body)
	}
	var sc contracts.Schedule
	if err := json.Unmarshal(w.Body.Bytes(), &sc); err != nil {
		t.Fatal(err)
	}
	return sc
}

func (sw *scheduleWorld) stored(t *testing.T, id string) (contracts.Schedule, bool) {
	t.Helper()
	sc, err := sw.store.GetSchedule(context.Background(), id)
	if errors.Is(err, contracts.ErrNotFound) {
		return sc, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return sc, true
}

func TestScheduleOwnership(t *testing.T) {
	sw := newScheduleWorld(t)
	sc := sw.create(t, alice, sw.wf.ID)
	if sc.Owner != alice.Name {
		t.Fatalf("owner %q, want alice", sc.Owner)
	}
	at := []string{"id", sw.wf.ID, "sch", sc.ID}
	codes := func(p contracts.Principal) map[string]int {
		return map[string]int{
			"get":   call(sw.s.getSchedule, p, "GET", "", at...).Code,
			"pause": call(sw.s.pauseSchedule, p, "POST", "", at...).Code,
		}
	}
	if got := codes(bob); got["get"] != 404 || got["pause"] != 404 {
		t.Errorf("bob: %v, want 404s (another's schedule is not found)", got)
	}
	if got := codes(operator); got["get"] != 200 || got["pause"] != 404 {
		t.Errorf("operator: %v, want get 200 and pause 404 (operators read, only owners act)", got)
	}
	if st, _ := sw.stored(t, sc.ID); st.Paused {
		t.Fatal("a refused pause paused the schedule")
	}
	if w := call(sw.s.deleteSchedule, bob, "DELETE", "", at...); w.Code != 404 {
		t.Errorf("bob's delete: %d", w.Code)
	}
	if _, ok := sw.stored(t, sc.ID); !ok {
		t.Fatal("bob's delete deleted alice's schedule")
	}
	// Under another workflow's path, the schedule is not found.
	if _, err := sw.store.CreateWorkflow(context.Background(), contracts.Workflow{ID: "wf_b", Owner: alice.Name, Name: "b", Script: "result = 2"}); err != nil {
		t.Fatal(err)
	}
	if w := call(sw.s.getSchedule, alice, "GET", "", "id", "wf_b", "sch", sc.ID); w.Code != 404 {
		t.Errorf("alice's schedule under wf_b: %d, want 404", w.Code)
	}
	// Scheduling another's workflow: not found for bob, forbidden for an
	// operator (who may see it).
	if w := call(sw.s.createSchedule, bob, "POST", `{"expression":"rate(5 minutes)"}`, "id", sw.wf.ID); w.Code != 404 {
		t.Errorf("bob scheduling alice's workflow: %d, want 404", w.Code)
	}
	if w := call(sw.s.createSchedule, operator, "POST", `{"expression":"rate(5 minutes)"}`, "id", sw.wf.ID); w.Code != 403 {
		t.Errorf("an operator scheduling alice's workflow: %d, want 403", w.Code)
	}
	// Lists: alice and the operator see it, bob sees nothing.
	for _, c := range []struct {
		p    contracts.Principal
		h    http.HandlerFunc
		path []string
		want int
	}{
		{alice, sw.s.listSchedules, nil, 1}, {operator, sw.s.listSchedules, nil, 1}, {bob, sw.s.listSchedules, nil, 0},
		{alice, sw.s.listWorkflowSchedules, []string{"id", sw.wf.ID}, 1}, {alice, sw.s.listWorkflowSchedules, []string{"id", "wf_b"}, 0},
	} {
		w := call(c.h, c.p, "GET", "", c.path...)
		var page struct {
			Schedules []scheduleSummary `json:"schedules"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || w.Code != 200 || len(page.Schedules) != c.want {
			t.Errorf("%s lists %v: %d %s, want %d schedules", c.p.Name, c.path, w.Code, w.Body, c.want)
		}
	}
	if w := call(sw.s.listWorkflowSchedules, bob, "GET", "", "id", sw.wf.ID); w.Code != 404 {
		t.Errorf("bob listing alice's workflow's schedules: %d, want 404", w.Code)
	}
}

// Pause disables at the Scheduler before the store says paused; resume
// writes the store before enabling; delete deletes at the Scheduler before
// the store. A failure between the two writes leaves nothing firing that
// was asked to stop, and repeating the request finishes it.
func TestScheduleWriteOrder(t *testing.T) {
	sw := newScheduleWorld(t)
	sc := sw.create(t, alice, sw.wf.ID)
	if c := sw.sched.last(); c.op != "create" || c.stored {
		t.Fatalf("create: %+v, want the Scheduler before the store", c)
	}
	at := []string{"id", sw.wf.ID, "sch", sc.ID}
	boom := errors.New("scheduler down")

	// Pause, the Scheduler failing: the store still says active (and the
	// schedule may be firing: nothing was stopped).
	sw.sched.fail["update"] = boom
	if w := call(sw.s.pauseSchedule, alice, "POST", "", at...); w.Code != 500 {
		t.Fatalf("pause with the Scheduler down: %d", w.Code)
	}
	if st, _ := sw.stored(t, sc.ID); st.Paused {
		t.Fatal("the store says paused though the Scheduler was never disabled")
	}
	delete(sw.sched.fail, "update")
	if w := call(sw.s.pauseSchedule, alice, "POST", "{}", at...); w.Code != 200 {
		t.Fatalf("pause: %d %s", w.Code, w.Body)
	}
	if c := sw.sched.last(); c.op != "update" || !c.paused || c.storePaused {
		t.Fatalf("pause: Scheduler call %+v, want DISABLED while the store still said active", c)
	}
	pausedAt, _ := sw.stored(t, sc.ID)
	if !pausedAt.Paused {
		t.Fatal("paused: the store does not say so")
	}
	// Pausing a paused schedule: 200, DISABLED applied again, the store
	// left as it is.
	n := sw.sched.count()
	if w := call(sw.s.pauseSchedule, alice, "POST", "", at...); w.Code != 200 {
		t.Fatalf("second pause: %d", w.Code)
	}
	if c := sw.sched.last(); sw.sched.count() != n+1 || c.op != "update" || !c.paused {
		t.Fatalf("second pause: %+v, want DISABLED re-applied", c)
	}
	if again, _ := sw.stored(t, sc.ID); !again.Paused || !again.UpdatedAt.Equal(pausedAt.UpdatedAt) {
		t.Fatalf("second pause rewrote the store: %+v", again)
	}

	// Resume, the Scheduler failing after the store write: shown active,
	// not firing until resumed again — which re-enables.
	sw.sched.fail["update"] = boom
	if w := call(sw.s.resumeSchedule, alice, "POST", "", at...); w.Code != 500 {
		t.Fatalf("resume with the Scheduler down: %d", w.Code)
	}
	if c := sw.sched.last(); c.op != "update" || c.paused || c.storePaused {
		t.Fatalf("resume: Scheduler call %+v, want ENABLED after the store said active", c)
	}
	delete(sw.sched.fail, "update")
	n = sw.sched.count()
	if w := call(sw.s.resumeSchedule, alice, "POST", "", at...); w.Code != 200 {
		t.Fatalf("resume again: %d", w.Code)
	}
	if c := sw.sched.last(); sw.sched.count() != n+1 || c.op != "update" || c.paused {
		t.Fatalf("resume again: %+v, want ENABLED re-applied", c)
	}

	// Delete, the Scheduler failing: the store keeps it; again: gone from
	// the Scheduler first, then the store; a third time: 404.
	sw.sched.fail["delete"] = boom
	if w := call(sw.s.deleteSchedule, alice, "DELETE", "", at...); w.Code != 500 {
		t.Fatalf("delete with the Scheduler down: %d", w.Code)
	}
	if _, ok := sw.stored(t, sc.ID); !ok {
		t.Fatal("the store deleted a schedule the Scheduler still fires")
	}
	delete(sw.sched.fail, "delete")
	if w := call(sw.s.deleteSchedule, alice, "DELETE", "", at...); w.Code != 204 {
		t.Fatalf("delete: %d %s", w.Code, w.Body)
	}
	if c := sw.sched.last(); c.op != "delete" || !c.stored {
		t.Fatalf("delete: %+v, want the Scheduler before the store", c)
	}
	if _, ok := sw.stored(t, sc.ID); ok {
		t.Fatal("still stored after delete")
	}
	if w := call(sw.s.deleteSchedule, alice, "DELETE", "", at...); w.Code != 404 {
		t.Fatalf("second delete: %d, want 404", w.Code)
	}
}

// A pause that finds the Scheduler's schedule gone (a delete died between
// its writes) finishes the delete.
func TestSchedulePauseFinishesADeadDelete(t *testing.T) {
	sw := newScheduleWorld(t)
	sc := sw.create(t, alice, sw.wf.ID)
	sw.sched.gone[sc.ID] = true
	if w := call(sw.s.pauseSchedule, alice, "POST", "", "id", sw.wf.ID, "sch", sc.ID); w.Code != 404 {
		t.Fatalf("pause of a half-deleted schedule: %d %s, want 404", w.Code, w.Body)
	}
	if _, ok := sw.stored(t, sc.ID); ok {
		t.Fatal("the half-deleted schedule is still stored")
	}
}

func TestScheduleBadInput(t *testing.T) {
	sw := newScheduleWorld(t)
	sc := sw.create(t, alice, sw.wf.ID)
	at := []string{"id", sw.wf.ID, "sch", sc.ID}
	for _, c := range []struct {
		name string
		w    *httptest.ResponseRecorder
		want int
	}{
		{"pause with fields", call(sw.s.pauseSchedule, alice, "POST", `{"paused":true}`, at...), 400},
		{"pause with a non-object", call(sw.s.pauseSchedule, alice, "POST", `[]`, at...), 400},
		{"resume with garbage", call(sw.s.resumeSchedule, alice, "POST", `{`, at...), 400},
		{"unknown schedule", call(sw.s.getSchedule, alice, "GET", "", "id", sw.wf.ID, "sch", "sch_nope"), 404},
		{"unknown workflow", call(sw.s.listWorkflowSchedules, alice, "GET", "", "id", "wf_nope"), 404},
		{"create on unknown workflow", call(sw.s.createSchedule, alice, "POST", `{"expression":"rate(5 minutes)"}`, "id", "wf_nope"), 404},
	} {
		if c.w.Code != c.want || !strings.HasPrefix(c.w.Header().Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s (%s), want %d JSON", c.name, c.w.Code, c.w.Body, c.w.Header().Get("Content-Type"), c.want)
		}
	}
	if st, _ := sw.stored(t, sc.ID); st.Paused {
		t.Error("a refused pause paused the schedule")
	}
}
