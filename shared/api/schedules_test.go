package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	cairnids "github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/workflow/schedule"
)

// asOwner serves h with the principal *p (once set) in each request's
// context: the owner of the workflow the test creates, whoever
// authentication makes that (it may override this one, with the same
// result: the principal that created the workflow).
func asOwner(h http.Handler, p *atomic.Pointer[contracts.Principal]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pr := p.Load(); pr != nil {
			r = r.WithContext(contracts.WithPrincipal(r.Context(), *pr))
		}
		h.ServeHTTP(w, r)
	})
}

// The life of a schedule through the API: create, list, pause (a firing
// then starts nothing, from the ticker or EventBridge), resume (a firing
// starts its run), delete (then 404, and a firing starts nothing).
func TestScheduleLifecycle(t *testing.T) {
	base := newFixture(t)
	var owner atomic.Pointer[contracts.Principal]
	srv := httptest.NewServer(asOwner(base.rt.API, &owner))
	t.Cleanup(srv.Close)
	f := &fixture{srv: srv, rt: base.rt}
	ctx := context.Background()

	wfr := f.call(t, "POST", "/v1/workflows", `{"name":"nightly","script":"result = 1"}`, nil)
	if wfr.status != http.StatusCreated {
		t.Fatalf("create workflow: %d %s", wfr.status, wfr.raw)
	}
	wfID := wfr.body["id"].(string)
	name, _ := wfr.body["owner"].(string)
	owner.Store(&contracts.Principal{Name: name})
	wf := "/v1/workflows/" + wfID
	// Fires only at 2199-01-01T12:00Z: the dev server's own ticker (on the
	// wall clock) never fires it; the test's ticker, on a manual clock, does.
	const expr = "cron(0 12 1 1 ? 2199)"
	firing := time.Date(2199, 1, 1, 12, 0, 0, 0, time.UTC)

	cr := f.call(t, "POST", wf+"/schedules", `{"expression":"`+expr+`","input":{"k":"v"}}`, nil)
	if cr.status != http.StatusCreated || cr.body["owner"] != name || cr.body["workflow_id"] != wfID {
		t.Fatalf("create schedule: %d %s", cr.status, cr.raw)
	}
	id := cr.body["id"].(string)
	sch := wf + "/schedules/" + id
	listed, err := f.rt.Ports.Workflows.GetSchedule(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{wf + "/schedules", "/v1/schedules"} {
		items := f.pages(t, path+"?limit=1", "schedules")
		if len(items) != 1 || items[0]["id"] != id || items[0]["paused"] != false || items[0]["input"] != nil || items[0]["input_bytes"] != float64(len(`{"k":"v"}`)) {
			t.Fatalf("GET %s: %v, want the schedule, summarised", path, items)
		}
	}
	if g := f.call(t, "GET", sch, "", nil); g.status != 200 || g.body["expression"] != expr || g.body["input"] == nil {
		t.Fatalf("GET schedule: %d %s", g.status, g.raw)
	}

	for range 2 { // idempotent
		if p := f.call(t, "POST", sch+"/pause", "", nil); p.status != 200 || p.body["paused"] != true {
			t.Fatalf("pause: %d %s", p.status, p.raw)
		}
	}
	clock := enginetest.NewClock(firing.Add(30 * time.Second))
	tk := &schedule.Ticker{List: f.rt.Ports.Workflows.ListSchedules, Fire: f.rt.Driver.Fire, Clock: clock}
	if n, err := tk.Tick(ctx); n != 0 || err != nil {
		t.Fatalf("tick while paused: fired %d, %v", n, err)
	}
	// Listed before the pause, fired after it (the ticker's race), and a
	// firing from EventBridge: neither starts a run.
	if err := f.rt.Driver.Fire(ctx, listed, firing); err != nil {
		t.Fatal(err)
	}
	m := contracts.Message{Kind: contracts.QueueWorkflow, SessionID: id, SubmissionID: id, ScheduleID: id, ScheduledAt: firing}
	if err := f.rt.Driver.Handle(ctx, m); err != nil {
		t.Fatal(err)
	}
	if runs := f.pages(t, wf+"/runs", "runs"); len(runs) != 0 {
		t.Fatalf("runs of a paused schedule: %v", runs)
	}

	if r := f.call(t, "POST", sch+"/resume", "{}", nil); r.status != 200 || r.body["paused"] == true {
		t.Fatalf("resume: %d %s", r.status, r.raw)
	}
	if n, err := tk.Tick(ctx); n != 1 || err != nil {
		t.Fatalf("tick after resume: fired %d, %v; want the 2199 firing", n, err)
	}
	runs := f.pages(t, wf+"/runs", "runs")
	if len(runs) != 1 || runs[0]["id"] != cairnids.ScheduledRun(id, firing) || runs[0]["schedule_id"] != id {
		t.Fatalf("runs after resume: %v", runs)
	}

	if d := f.call(t, "DELETE", sch, "", nil); d.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", d.status, d.raw)
	}
	for _, c := range []struct{ method, path string }{{"GET", sch}, {"POST", sch + "/pause"}, {"POST", sch + "/resume"}, {"DELETE", sch}} {
		if r := f.call(t, c.method, c.path, "", nil); r.status != 404 || r.body["error"] == nil {
			t.Errorf("%s %s after delete: %d %s, want a 404 JSON error", c.method, c.path, r.status, r.raw)
		}
	}
	if items := f.pages(t, "/v1/schedules", "schedules"); len(items) != 0 {
		t.Errorf("listed after delete: %v", items)
	}
	later := firing.Add(time.Hour)
	if err := f.rt.Driver.Fire(ctx, listed, later); err != nil {
		t.Fatal(err)
	}
	if runs := f.pages(t, wf+"/runs", "runs"); len(runs) != 1 {
		t.Fatalf("runs after delete: %v, want only the one before", runs)
	}
}

func TestScheduleRoutesRefuseBadInput(t *testing.T) {
	base := newFixture(t)
	var owner atomic.Pointer[contracts.Principal]
	srv := httptest.NewServer(asOwner(base.rt.API, &owner))
	t.Cleanup(srv.Close)
	f := &fixture{srv: srv, rt: base.rt}
	wfr := f.call(t, "POST", "/v1/workflows", `{"name":"w","script":"result = 1"}`, nil)
	if wfr.status != http.StatusCreated {
		t.Fatalf("create workflow: %d %s", wfr.status, wfr.raw)
	}
	name, _ := wfr.body["owner"].(string)
	owner.Store(&contracts.Principal{Name: name})
	wf := "/v1/workflows/" + wfr.body["id"].(string)
	cr := f.call(t, "POST", wf+"/schedules", `{"expression":"rate(5 minutes)"}`, nil)
	if cr.status != http.StatusCreated {
		t.Fatalf("create schedule: %d %s", cr.status, cr.raw)
	}
	sch := wf + "/schedules/" + cr.body["id"].(string)
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", wf + "/schedules", `{"expression":"rate(5 seconds)"}`, 400},
		{"POST", wf + "/schedules", `{"expression":"rate(5 minutes)","paused":true}`, 400},
		{"POST", sch + "/pause", `{"now":true}`, 400},
		{"POST", sch + "/resume", `null`, 400},
		{"GET", "/v1/schedules?limit=0", "", 400},
		{"GET", wf + "/schedules?cursor=bogus", "", 400},
		{"GET", "/v1/workflows/wf_nope/schedules", "", 404},
		{"GET", wf + "/schedules/sch_nope", "", 404},
		{"DELETE", "/v1/workflows/wf_nope/schedules/" + cr.body["id"].(string), "", 404},
		{"PUT", sch, "", 405},
	} {
		r := f.call(t, c.method, c.path, c.body, nil)
		if r.status != c.want || r.body["error"] == nil {
			t.Errorf("%s %s %s: %d %s, want %d with a JSON error", c.method, c.path, c.body, r.status, r.raw, c.want)
		}
	}
	if g := f.call(t, "GET", sch, "", nil); g.status != 200 || g.body["paused"] == true {
		t.Fatalf("after the refusals: %d %s, want the schedule, not paused", g.status, g.raw)
	}
}
