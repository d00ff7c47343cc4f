package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// Every action is a POST to the API's own route: the record changes, and
// the browser is sent back to the page the action was made on.
func TestApproveAndDenyReachTheEngine(t *testing.T) {
	f := newFixture(t)
	session, sub, aid := f.parked(t, "alice")
	turn := "/console/sessions/" + session + "/turns/" + sub
	p := f.post(t, "alice", "/console/sessions/"+session+"/approvals/"+aid, url.Values{"decision": {"allow"}, "reason": {"looks safe"}, "back": {turn}})
	redirected(t, p, turn)
	a := f.h.Get(sub).Approvals[0]
	if a.Decision != contracts.Allow || a.DecidedBy != "alice" || a.Reason != "looks safe" {
		t.Fatalf("the approval after the console allowed it: %+v", a)
	}
	// Decided, not yet run: the record's current step holds the decision.
	doc := f.ok(t, "alice", turn)
	li := one(t, doc, `ul#decided li[data-approval="`+aid+`"][data-decision="allow"]`)
	if text(one(t, li, ".decided-by")) != "alice" || len(all(t, doc, "form.approval")) != 0 {
		t.Fatalf("the decided approval shows %q", text(li))
	}
	f.h.Drain()
	doc = f.ok(t, "alice", turn)
	if attr(one(t, doc, "#phase"), "data-phase") != "COMMITTED" || attr(one(t, doc, "body"), "data-done") != "true" {
		t.Fatal("the ended turn's page is not COMMITTED and done")
	}
	one(t, doc, `ol#timeline li.ev[data-type="tool_finished"][data-status="finished"][data-tool="bash"]`)

	// Denied from the approvals page: back there; the call never runs.
	session, sub, aid = f.parked(t, "alice")
	p = f.post(t, "alice", "/console/sessions/"+session+"/approvals/"+aid, url.Values{"decision": {"deny"}, "back": {"/console/approvals"}})
	redirected(t, p, "/console/approvals")
	if a := f.h.Get(sub).Approvals; len(a) != 1 || a[0].Decision != contracts.Deny || a[0].DecidedBy != "alice" {
		t.Fatalf("the denied turn's approvals: %+v", a)
	}
	f.h.Drain()
	one(t, f.ok(t, "alice", "/console/sessions/"+session+"/turns/"+sub), `ol#timeline li.ev[data-type="tool_denied"][data-status="denied"]`)

	// Bad input: the API's error on the page; a back that leaves the console is ignored.
	session, sub, aid = f.parked(t, "alice")
	p = f.post(t, "alice", "/console/sessions/"+session+"/approvals/"+aid, url.Values{"decision": {"maybe"}})
	if p.status != http.StatusBadRequest || attr(one(t, p.doc, "#error"), "data-code") != "invalid_request" {
		t.Fatalf("decision=maybe: %d %s", p.status, clip(p.body))
	}
	p = f.post(t, "alice", "/console/sessions/"+session+"/approvals/"+aid, url.Values{"decision": {"allow"}, "back": {"//evil.example/x"}})
	redirected(t, p, "/console/sessions/"+session)
}

func TestCancelAndRetryReachTheEngine(t *testing.T) {
	f := newFixture(t)
	session, sub, _ := f.parked(t, "alice")
	turn := "/console/sessions/" + session + "/turns/" + sub
	redirected(t, f.post(t, "alice", turn+"/cancel", url.Values{"reason": {"wrong direction"}}), turn)
	got := f.h.Get(sub)
	if got.Phase != contracts.PhaseCancelled || got.Cancel == nil || got.Cancel.By != "alice" || got.Cancel.Reason != "wrong direction" {
		t.Fatalf("after the console's cancel: %s %+v", got.Phase, got.Cancel)
	}
	// Cancelling again is harmless (the API is idempotent).
	redirected(t, f.post(t, "alice", turn+"/cancel", nil), turn)

	failed := f.id(t, "alice", "/v1/sessions", `{"model":"scripted:loop","limits":{"max_steps":1}}`)
	fsub := f.id(t, "alice", "/v1/sessions/"+failed+"/submissions", `{"prompt":"loop"}`)
	f.h.Drain()
	fturn := "/console/sessions/" + failed + "/turns/" + fsub
	// Still over its limit: the API says which, on the page.
	if p := f.post(t, "alice", fturn+"/retry", nil); p.status != http.StatusBadRequest || !strings.Contains(text(one(t, p.doc, "#error")), "max_steps") {
		t.Fatalf("a retry under the same limit: %d %s", p.status, clip(p.body))
	}
	if p := f.post(t, "alice", fturn+"/retry", url.Values{"max_steps": {"-3"}}); p.status != http.StatusBadRequest {
		t.Fatalf("max_steps=-3: %d", p.status)
	}
	redirected(t, f.post(t, "alice", fturn+"/retry", url.Values{"max_steps": {"3"}}), fturn)
	got = f.h.Get(fsub)
	if len(got.Retries) != 1 || got.Retries[0].By != "alice" || got.Limits == nil || got.Limits.MaxSteps != 3 || got.Phase == contracts.PhaseFailed {
		t.Fatalf("after the console's retry: %s %+v limits %+v", got.Phase, got.Retries, got.Limits)
	}
}

func TestSubmitAndForkReachTheEngine(t *testing.T) {
	f := newFixture(t)
	session := f.id(t, "alice", "/v1/sessions", `{"model":"scripted:plain"}`)
	form := url.Values{"prompt": {"hello from the console"}, "nonce": {"n1"}}
	loc := redirected(t, f.post(t, "alice", "/console/sessions/"+session+"/submit", form), "/console/sessions/"+session+"/turns/")
	sub := strings.TrimPrefix(loc, "/console/sessions/"+session+"/turns/")
	if got := f.h.Get(sub); got.Prompt != "hello from the console" || got.Parent != "" {
		t.Fatalf("the submitted turn: %q parent %q", got.Prompt, got.Parent)
	}
	// The same form sent twice is one turn.
	if again := redirected(t, f.post(t, "alice", "/console/sessions/"+session+"/submit", form), "/console/"); again != loc {
		t.Fatalf("the form sent again made %s, want %s", again, loc)
	}
	f.h.Drain()
	point := ids.Node(sub, 0, contracts.RoleUser)
	loc = redirected(t, f.post(t, "alice", "/console/sessions/"+session+"/submit",
		url.Values{"prompt": {"a different answer"}, "parent": {point}, "nonce": {"n1"}}), "/console/sessions/"+session+"/turns/")
	fork := strings.TrimPrefix(loc, "/console/sessions/"+session+"/turns/")
	if got := f.h.Get(fork); got.Parent != point || fork == sub {
		t.Fatalf("the fork: %s parent %q", fork, got.Parent)
	}
	f.h.Drain()
	doc := f.ok(t, "alice", "/console/sessions/"+session)
	if len(all(t, doc, `li.node[data-node="`+point+`"] ul.branches li.branch`)) != 2 {
		t.Fatal("the fork point does not show two branches")
	}
	// Bad input: an empty prompt, a fork from a node of nowhere.
	for _, v := range []url.Values{{"prompt": {"  "}}, {"prompt": {"x"}, "parent": {"nd_nope"}}} {
		p := f.post(t, "alice", "/console/sessions/"+session+"/submit", v)
		if p.status != http.StatusBadRequest || attr(one(t, p.doc, "#error"), "data-code") != "invalid_request" || text(one(t, p.doc, "#error .message")) == "" {
			t.Fatalf("submit %v: %d %s", v, p.status, clip(p.body))
		}
	}
}

func TestRunAndScheduleActionsReachTheEngine(t *testing.T) {
	f := newFixture(t)
	wf := f.id(t, "alice", "/v1/workflows", `{"name":"w","script":"result = agent(\"hi\", model=\"scripted:plain\").output"}`)
	run := f.id(t, "alice", "/v1/workflows/"+wf+"/runs", `{}`) // not drained: it runs
	page := "/console/workflows/" + wf + "/runs/" + run
	doc := f.ok(t, "alice", page)
	if text(one(t, doc, "#run-status")) != "RUNNING" {
		t.Fatalf("#run-status %s", text(one(t, doc, "#run-status")))
	}
	one(t, doc, "form#cancel-run button#cancel-run-btn")
	redirected(t, f.post(t, "alice", page+"/cancel", url.Values{"reason": {"not now"}}), page)
	f.h.Drain()
	var got struct {
		Status string `json:"status"`
	}
	f.api(t, "alice", http.MethodGet, "/v1/workflows/"+wf+"/runs/"+run, "", &got)
	if got.Status != "CANCELLED" {
		t.Fatalf("the run after the console's cancel: %s", got.Status)
	}

	sch := f.id(t, "alice", "/v1/workflows/"+wf+"/schedules", `{"expression":"rate(5 minutes)"}`)
	redirected(t, f.post(t, "alice", "/console/workflows/"+wf+"/schedules/"+sch+"/pause", nil), "/console/schedules")
	doc = f.ok(t, "alice", "/console/schedules")
	one(t, doc, `tr[data-schedule="`+sch+`"][data-paused="true"] form.schedule-action[data-action="resume"]`)
	redirected(t, f.post(t, "alice", "/console/workflows/"+wf+"/schedules/"+sch+"/resume", nil), "/console/schedules")
	one(t, f.ok(t, "alice", "/console/schedules"), `tr[data-schedule="`+sch+`"][data-paused="false"]`)
}

// The decided approvals of earlier steps (Submission.Decided, with who
// and when) stay on the turn page after the turn moved on.
func TestDecidedApprovalsOfEarlierSteps(t *testing.T) {
	f := newFixture(t)
	session, sub, aid := f.parked(t, "alice")
	at := f.h.Clock.Now()
	f.h.Set(sub, func(s *contracts.Submission) {
		a := s.Approvals[0]
		a.Decision, a.DecidedBy, a.DecidedAt, a.Reason = contracts.Deny, "alice", at, "not that"
		s.Decided, s.Approvals = []contracts.Approval{a}, nil
	})
	doc := f.ok(t, "alice", "/console/sessions/"+session+"/turns/"+sub)
	li := one(t, doc, `ul#decided li[data-approval="`+aid+`"][data-decision="deny"]`)
	if text(one(t, li, ".decided-by")) != "alice" || attr(one(t, li, ".decided-at time"), "datetime") != at.UTC().Format("2006-01-02T15:04:05Z07:00") {
		t.Fatalf("the earlier step's decision shows %q", text(li))
	}
	if !strings.Contains(text(li), "not that") {
		t.Fatalf("the reason is missing: %q", text(li))
	}
}
