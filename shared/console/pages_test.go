package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// world is alice's work, one of each thing a page shows.
type world struct {
	parked, parkedSub, approval string // a turn waiting on an approval
	plain                       string // two committed turns, then a fork from the first turn's answer
	first, fork                 string // the first turn, the fork's turn
	forkPoint                   string // the node the fork starts from
	failed, failedSub           string // a turn FAILED on its step limit
	wf, run, schedule           string // a workflow whose run ended, with one node, and a schedule
}

func build(t *testing.T, f *fixture) world {
	t.Helper()
	var w world
	w.parked, w.parkedSub, w.approval = f.parked(t, "alice")
	w.plain = f.id(t, "alice", "/v1/sessions", `{"model":"scripted:plain"}`)
	w.first = f.id(t, "alice", "/v1/sessions/"+w.plain+"/submissions", `{"prompt":"the first question"}`)
	f.h.Drain()
	f.id(t, "alice", "/v1/sessions/"+w.plain+"/submissions", `{"prompt":"the second question"}`)
	f.h.Drain()
	w.forkPoint = ids.Node(w.first, 0, contracts.RoleAssistant)
	w.fork = f.id(t, "alice", "/v1/sessions/"+w.plain+"/submissions", `{"prompt":"another second question","parent":"`+w.forkPoint+`"}`)
	f.h.Drain()
	w.failed = f.id(t, "alice", "/v1/sessions", `{"model":"scripted:loop","limits":{"max_steps":1}}`)
	w.failedSub = f.id(t, "alice", "/v1/sessions/"+w.failed+"/submissions", `{"prompt":"loop"}`)
	f.h.Drain()
	if got := f.h.Get(w.failedSub); got.Phase != contracts.PhaseFailed {
		t.Fatalf("the loop turn is %s, want FAILED", got.Phase)
	}
	w.wf = f.id(t, "alice", "/v1/workflows", `{"name":"fan","script":"result = agent(\"hi\", model=\"scripted:plain\").output"}`)
	w.run = f.id(t, "alice", "/v1/workflows/"+w.wf+"/runs", `{}`)
	f.h.Drain()
	w.schedule = f.id(t, "alice", "/v1/workflows/"+w.wf+"/schedules", `{"expression":"rate(5 minutes)"}`)
	return w
}

func TestSessionsPage(t *testing.T) {
	f := newFixture(t)
	w := build(t, f)
	doc := f.ok(t, "alice", "/console/")
	one(t, doc, "form#search input#q")
	one(t, doc, "form#search #owner")
	one(t, doc, "form#search select#state")
	for _, s := range []string{w.parked, w.plain, w.failed} {
		one(t, doc, `table#sessions tr[data-session="`+s+`"] a.session-link[href="/console/sessions/`+s+`"]`)
	}
	if st := attr(one(t, doc, `tr[data-session="`+w.parked+`"]`), "data-state"); st != "parked" {
		t.Fatalf("the parked session's state: %s", st)
	}
	rows := func(path string) []string {
		var out []string
		for _, tr := range all(t, f.ok(t, "alice", path), "table#sessions tr[data-session]") {
			out = append(out, attr(tr, "data-session"))
		}
		return out
	}
	if got := rows("/console/?state=parked"); len(got) != 1 || got[0] != w.parked {
		t.Fatalf("state=parked: %v", got)
	}
	if got := rows("/console/?q=FIRST+question"); len(got) != 1 || got[0] != w.plain {
		t.Fatalf("q=first question (the title): %v", got)
	}
	if got := rows("/console/?q=" + w.failed[len(w.failed)-6:]); len(got) != 1 || got[0] != w.failed {
		t.Fatalf("q=<part of an id>: %v", got)
	}
	if got := rows("/console/?owner=bob"); len(got) != 0 {
		t.Fatalf("owner=bob as alice: %v", got)
	}
	// alice's three and the workflow node's session (a run's sessions are its owner's);
	// the operator sees alice's too, and filters by owner.
	if got := rows("/console/?owner=alice"); len(got) != 4 {
		t.Fatalf("alice's own, filtered: %v", got)
	}
	opsDoc := f.ok(t, "ops", "/console/?owner=alice")
	if n := len(all(t, opsDoc, "table#sessions tr[data-session]")); n != 4 {
		t.Fatalf("the operator's owner=alice: %d rows", n)
	}
	if p := f.get(t, "alice", "/console/?state=asleep"); p.status != http.StatusBadRequest || !strings.Contains(text(one(t, p.doc, "#error")), "running, parked or idle") {
		t.Fatalf("a bad state: %d %s", p.status, clip(p.body))
	}
}

func TestSessionPageShowsTheTree(t *testing.T) {
	f := newFixture(t)
	w := build(t, f)
	doc := f.ok(t, "alice", "/console/sessions/"+w.plain)
	nodes := all(t, doc, "ul#tree li.node")
	if len(nodes) != 6 {
		t.Fatalf("the tree has %d nodes, want 6 (two turns, and a fork's two)", len(nodes))
	}
	for _, n := range nodes {
		id := attr(n, "data-node")
		if r := attr(n, "data-role"); r != "user" && r != "assistant" && r != "tool" {
			t.Fatalf("node %s role %q", id, r)
		}
		one(t, n, `button.fork[data-node="`+id+`"]`)
	}
	head := one(t, doc, `ul#tree li.node[data-head="true"]`)
	if want := ids.Node(w.fork, 0, contracts.RoleAssistant); attr(head, "data-node") != want {
		t.Fatalf("head %s, want the fork's answer %s", attr(head, "data-node"), want)
	}
	// The branch point holds both branches: the second turn and the fork.
	point := one(t, doc, `li.node[data-node="`+w.forkPoint+`"]`)
	branches := all(t, point, "ul.branches li.branch")
	if len(branches) != 2 {
		t.Fatalf("the fork point has %d branches, want 2", len(branches))
	}
	forkUser := one(t, doc, `li.node[data-node="`+ids.Node(w.fork, 0, contracts.RoleUser)+`"]`)
	if !inside(forkUser, point) || attr(forkUser, "data-parent") != w.forkPoint {
		t.Fatalf("the fork's first node is not nested under its parent")
	}
	fork := one(t, doc, "form#fork")
	if _, hidden := attrOK(fork, "hidden"); !hidden {
		t.Fatal("form#fork is shown before a fork button is pressed")
	}
	one(t, fork, `input[type=hidden][name=parent]`)
	one(t, fork, `textarea[name=prompt]`)
	one(t, fork, `button#fork-submit`)
	one(t, doc, `form#submit textarea[name=prompt]`)
	one(t, doc, `form#submit button#submit-prompt`)
	turns := all(t, doc, `table#turns tr[data-submission][data-phase="COMMITTED"]`)
	if len(turns) != 3 {
		t.Fatalf("%d committed turns in #turns, want 3", len(turns))
	}
	one(t, doc, `tr[data-submission="`+w.first+`"] a[href="/console/sessions/`+w.plain+`/turns/`+w.first+`"]`)

	// A parked session shows its approval on the session page too.
	doc = f.ok(t, "alice", "/console/sessions/"+w.parked)
	one(t, doc, `#approvals form.approval[data-approval="`+w.approval+`"]`)
	// An assistant node that asks for tools cannot be forked from: its button says why.
	asks := one(t, doc, `li.node[data-node="`+ids.Node(w.parkedSub, 0, contracts.RoleAssistant)+`"] button.fork`)
	if attr(asks, "aria-disabled") != "true" || attr(asks, "data-reason") == "" {
		t.Fatalf("the fork button of a node asking for tools: %v", asks.Attr)
	}
}

func TestTurnPage(t *testing.T) {
	f := newFixture(t)
	w := build(t, f)
	doc := f.ok(t, "alice", "/console/sessions/"+w.parked+"/turns/"+w.parkedSub)
	if ph := attr(one(t, doc, "#phase"), "data-phase"); ph != "TOOLS" {
		t.Fatalf("#phase %s", ph)
	}
	one(t, doc, `ol#timeline li.ev[data-type="approval_needed"][data-seq]`)
	one(t, doc, `ol#timeline li.ev[data-type="step"]`)
	one(t, doc, `ol#timeline li.ev[data-type="text_delta"][data-attempt="1"]`)
	form := one(t, doc, `form.approval[data-approval="`+w.approval+`"]`)
	if in := text(one(t, form, "pre.approval-input")); in != "echo approved >> approved.txt" {
		t.Fatalf("the approval shows %q, want the command", in)
	}
	if text(one(t, form, ".tool")) != "bash" {
		t.Fatal("the approval does not name its tool")
	}
	one(t, form, `input[name=reason]`)
	one(t, form, `button[name=decision][value=allow]`)
	one(t, form, `button[name=decision][value=deny]`)
	one(t, doc, "form#cancel button#cancel-btn")
	if len(all(t, doc, "form#retry")) != 0 {
		t.Fatal("a parked turn offers a retry")
	}
	st := one(t, doc, "#stream")
	if attr(st, "data-events") != "/console/sessions/"+w.parked+"/turns/"+w.parkedSub+"/events" || attr(st, "data-after") == "0" {
		t.Fatalf("#stream %v", st.Attr)
	}
	if !strings.Contains(text(st), "This needs your approval.") {
		t.Fatalf("#stream holds %q", text(st))
	}
	if _, done := attrOK(one(t, doc, "body"), "data-done"); done {
		t.Fatal("a parked turn's page is marked done")
	}

	doc = f.ok(t, "alice", "/console/sessions/"+w.failed+"/turns/"+w.failedSub)
	one(t, doc, "form#retry button#retry-btn")
	if len(all(t, doc, "form#cancel")) != 0 || attr(one(t, doc, "body"), "data-done") != "true" {
		t.Fatal("a FAILED turn offers a cancel, or is not marked done")
	}
	one(t, doc, `ol#timeline li.ev[data-type="failed"]`)
	one(t, doc, "#record #attempt")
	one(t, doc, "#record #lease")
	one(t, doc, "#record #usage")
	one(t, doc, "#record #cost")
}

func TestApprovalsWorkflowsSchedulesUsagePages(t *testing.T) {
	f := newFixture(t)
	w := build(t, f)
	doc := f.ok(t, "alice", "/console/approvals")
	form := one(t, doc, `#approvals form.approval[data-approval="`+w.approval+`"]`)
	if attr(form, "action") != "/console/sessions/"+w.parked+"/approvals/"+w.approval {
		t.Fatalf("approval form action %s", attr(form, "action"))
	}
	one(t, form, `input[name=back][value="/console/approvals"]`)
	if n := len(all(t, f.ok(t, "bob", "/console/approvals"), "form.approval")); n != 0 {
		t.Fatalf("bob sees %d of alice's approvals", n)
	}

	doc = f.ok(t, "alice", "/console/workflows")
	runHref := "/console/workflows/" + w.wf + "/runs/" + w.run
	one(t, doc, `table#workflows tr[data-workflow="`+w.wf+`"] a.run-link[href="`+runHref+`"]`)
	doc = f.ok(t, "alice", "/console/workflows/"+w.wf)
	one(t, doc, `table#runs tr[data-run="`+w.run+`"][data-status="SUCCEEDED"]`)

	doc = f.ok(t, "alice", runHref)
	if st := text(one(t, doc, "#run-status")); st != "SUCCEEDED" {
		t.Fatalf("#run-status %s", st)
	}
	node := one(t, doc, `svg#graph g.node[data-node][data-state="done"]`)
	link := node.Parent
	if link.Data != "a" || !strings.HasPrefix(attr(link, "href"), "/console/sessions/") || !strings.Contains(attr(link, "href"), "/turns/") {
		t.Fatalf("the graph's node is not wrapped in a link to its turn: %s %v", link.Data, link.Attr)
	}
	f.ok(t, "alice", attr(link, "href")) // and the link works
	if len(all(t, doc, "form#cancel-run")) != 0 {
		t.Fatal("an ended run offers a cancel")
	}

	doc = f.ok(t, "alice", "/console/schedules")
	row := one(t, doc, `table#schedules tr[data-schedule="`+w.schedule+`"][data-paused="false"]`)
	if !strings.Contains(text(row), "rate(5 minutes)") || !strings.Contains(text(row), "alice") || len(all(t, row, "time")) == 0 {
		t.Fatalf("schedule row %q", text(row))
	}

	doc = f.ok(t, "alice", "/console/usage")
	one(t, doc, `table#usage-principals tr[data-principal="alice"]`)
	if n := len(all(t, doc, "table#usage-turns tr[data-submission]")); n < 5 {
		t.Fatalf("%d turns in #usage-turns", n)
	}
	if p := f.get(t, "alice", "/console/usage?from=yesterday"); p.status != http.StatusBadRequest || !strings.Contains(text(one(t, p.doc, "#error")), "RFC 3339") {
		t.Fatalf("a bad from: %d %s", p.status, clip(p.body))
	}
	if p := f.get(t, "alice", "/console/nowhere"); p.status != http.StatusNotFound {
		t.Fatalf("an unknown page: %d", p.status)
	}
	for _, asset := range []string{"/console/static/console.js", "/console/static/console.css"} {
		if p := f.get(t, "", asset); p.status != http.StatusOK || len(p.body) < 1000 {
			t.Fatalf("%s: %d", asset, p.status)
		}
	}
}
