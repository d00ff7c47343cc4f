package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// The web console (/console/, shared/console) in a real headless Chromium
// against a real `cairn dev` (issue 19): each test starts its own server
// on a fresh data directory and port, and its own browser, logs in with
// the login URL `cairn dev` prints, and drives the pages through the DOM
// hooks they document. Screenshots of every page go to the artefact
// directory (browser_test.go). Run them alone with
// `go test -run Console ./cmd/cairn/`.

const consoleToken = "console-test"

// consoleServer is a `cairn dev` for a browser test, and its data
// directory.
type consoleServer struct {
	*devServer
	data string
}

// startConsole starts `cairn dev` on a fresh data directory and port, and
// a browser signed in to its console through the sign-in link it prints.
func startConsole(t *testing.T) (*consoleServer, *browser) {
	t.Helper()
	if _, err := findChromium(); err != nil {
		newBrowser(t, "") // skips, or fails under CI, saying how to install one
	}
	data := t.TempDir()
	d, link := launch(t, data, nil, "console ", consoleToken,
		"dev", "--data", data, "--addr", "127.0.0.1:0", "--token", consoleToken)
	u, err := url.Parse(link)
	if err != nil || u.Path != "/console/login" || u.Query().Get("token") != consoleToken {
		t.Fatalf("cairn dev printed the console link %q (%v); want http://ADDR/console/login?token=%s", link, err, consoleToken)
	}
	base := u.Scheme + "://" + u.Host
	if d.cl, err = remoteClient(base, consoleToken); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base)
	b.login(link)
	t.Cleanup(b.noExceptions)
	return &consoleServer{devServer: d, data: data}, b
}

// turnPath is a turn's page.
func turnPath(sid, sub string) string { return "/console/sessions/" + sid + "/turns/" + sub }

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string { return strconv.Quote(s) }

// submissionsOf lists a session's submissions through the API.
func submissionsOf(t *testing.T, ctx context.Context, cl *client.Client, sid string) []client.SubmissionSummary {
	t.Helper()
	pg, err := cl.Submissions(ctx, sid, client.SubmissionListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pg.Items
}

// done is the predicate of a turn page whose turn has ended in phase.
func done(phase contracts.Phase) string {
	return fmt.Sprintf(`document.body.dataset.done === "true" && document.querySelector("#phase")?.dataset.phase === %s`, jsString(string(phase)))
}

// 1. The sessions list, then a scripted turn submitted from its session's
// page and watched on its turn page: #stream grows while the turn runs,
// then the page says it is done and COMMITTED.
func TestConsoleStreamsATurnToCommit(t *testing.T) {
	d, b := startConsole(t)
	ctx := context.Background()
	// one chunk of 24 bytes every 80 ms: the answer streams for ~8 s
	sess, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:bench-2400-24-16@80ms"})
	if err != nil {
		t.Fatal(err)
	}

	b.open("/console/")
	row := `table#sessions tr[data-session=` + jsString(sess.ID) + `]`
	b.waitJS(`document.querySelector(`+jsString(row+` a.session-link`)+`) !== null`, "the session in the sessions list")
	b.shot("sessions")
	b.clickToLoad(row + ` a.session-link`)
	b.waitJS(`location.pathname === `+jsString("/console/sessions/"+sess.ID)+` && document.querySelector("form#submit") !== null`, "the session's page")

	b.fill(`form#submit textarea[name=prompt]`, "stream a long answer")
	b.clickToLoad(`#submit-prompt`)
	// The page either goes to the new turn's page or lists the turn.
	b.waitJS(`location.pathname.includes("/turns/") || document.querySelector("table#turns tr[data-submission]") !== null`, "the submitted turn")
	subs := submissionsOf(t, ctx, d.cl, sess.ID)
	if len(subs) != 1 || subs[0].Prompt != "stream a long answer" {
		t.Fatalf("submissions after submitting from the page: %+v; want one with the prompt typed", subs)
	}
	sub := subs[0].ID
	if !strings.HasSuffix(eval[string](b, `location.pathname`), "/turns/"+sub) {
		b.clickToLoad(`table#turns tr[data-submission=` + jsString(sub) + `] a`)
	}
	b.waitJS(`location.pathname === `+jsString(turnPath(sess.ID, sub))+` && document.querySelector("#stream") !== null`, "the turn's page")

	// Live text: some, then more, while the turn is still running.
	const running = `document.body.dataset.done !== "true"`
	b.waitJS(`document.querySelector("#stream").textContent.includes("lorem") && `+running, "streamed answer text while the turn runs")
	first := eval[int](b, `document.querySelector("#stream").textContent.length`)
	b.waitJS(fmt.Sprintf(`document.querySelector("#stream").textContent.length > %d && %s`, first+48, running), "the streamed text to grow while the turn runs")
	// (the live view sets #phase and data-done in one task: one read sees both)
	if early := eval[bool](b, running+` && document.querySelector("#phase").dataset.phase === "COMMITTED"`); early {
		t.Fatal("#phase says COMMITTED while the page is not done")
	}
	b.shot("turn-streaming")

	b.waitJS(done(contracts.PhaseCommitted), "the turn to commit on its page")
	// What the server draws from the record is redrawn once the turn
	// ends: no lease, no cancel button, the final result.
	b.waitJS(`Number(document.body.dataset.redrawn) > 0 && document.querySelector("#lease .none") !== null &&
		document.querySelector("#cancel") === null && document.querySelector("#turn-end #result") !== null`, "the record redrawn after the commit")
	b.shot("turn-committed")
	b.shot("turn-timeline", "#timeline-h")
	got, err := d.cl.Submission(ctx, sess.ID, sub)
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != contracts.PhaseCommitted {
		t.Fatalf("the page says COMMITTED, the API %s", got.Phase)
	}
	if text := eval[string](b, `document.querySelector("#stream").textContent`); !strings.Contains(text, got.Result) {
		t.Fatalf("#stream does not hold the committed answer (%d bytes):\n%q", len(got.Result), text)
	}
	// The timeline: every event once, in order, ending with the commit.
	seqs := eval[[]int](b, `[...document.querySelectorAll("ol#timeline li.ev")].map(e => Number(e.dataset.seq))`)
	types := eval[[]string](b, `[...document.querySelectorAll("ol#timeline li.ev")].map(e => e.dataset.type)`)
	for i := range seqs {
		if seqs[i] < 1 || i > 0 && seqs[i] <= seqs[i-1] {
			t.Fatalf("timeline seqs %v: want each event once, in order", seqs)
		}
	}
	if !slices.Contains(types, string(contracts.EventToolStarted)) || types[len(types)-1] != string(contracts.EventCommitted) {
		t.Fatalf("timeline types %v: want a tool call and committed last", types)
	}

	// The sessions list's search: by id, then for something no session has.
	other, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:plain"})
	if err != nil {
		t.Fatal(err)
	}
	b.open("/console/")
	b.fill(`form#search input#q`, sess.ID)
	b.clickToLoad(`form#search button[type=submit]`)
	rows := eval[[]string](b, `[...document.querySelectorAll("table#sessions tr[data-session]")].map(r => r.dataset.session)`)
	if len(rows) != 1 || rows[0] != sess.ID {
		t.Fatalf("searching for %s lists %v (not %s)", sess.ID, rows, other.ID)
	}
	b.fill(`form#search input#q`, "no-such-session")
	b.clickToLoad(`form#search button[type=submit]`)
	if n := eval[int](b, `document.querySelectorAll("table#sessions tr[data-session]").length`); n != 0 {
		t.Fatalf("searching for what no session has lists %d sessions", n)
	}
}

// 2. A turn parked for an approval, decided from its turn page: the page
// shows the command, allow is clicked, the turn commits and #decided says
// who decided, and why.
func TestConsoleApprovesAParkedTurn(t *testing.T) {
	d, b := startConsole(t)
	ctx := context.Background()
	sess, err := d.cl.CreateSession(ctx, contracts.SessionSpec{
		Model:  "scripted:approval",
		Policy: contracts.Policy{Tools: map[string]contracts.Decision{"bash": contracts.Ask}},
	})
	if err != nil {
		t.Fatal(err)
	}
	su, err := d.cl.Submit(ctx, sess.ID, "needs approval", client.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ctx, d.cl, sess.ID, su.ID, func(e contracts.Event) bool { return e.Type == contracts.EventApprovalNeeded })
	s, err := d.cl.Session(ctx, sess.ID)
	if err != nil || len(s.PendingApprovals) != 1 {
		t.Fatalf("pending approvals %+v, %v; want one", s.PendingApprovals, err)
	}
	aid := s.PendingApprovals[0].ID
	form := `form.approval[data-approval=` + jsString(aid) + `]`
	const command = "echo approved >> approved.txt"

	b.open("/console/approvals")
	b.waitJS(`document.querySelector(`+jsString(form+` pre.approval-input`)+`)?.textContent.includes(`+jsString(command)+`)`, "the pending approval with its command on /console/approvals")
	b.shot("approvals")

	b.open(turnPath(sess.ID, su.ID))
	b.waitJS(`document.querySelector(`+jsString(form+` pre.approval-input`)+`)?.textContent.includes(`+jsString(command)+`)`, "the approval with its command on the turn's page")
	if dn := eval[string](b, `document.body.dataset.done || ""`); dn == "true" {
		t.Fatal("a parked turn's page says it is done")
	}
	b.shot("turn-approval")
	b.fill(form+` input[name=reason]`, "looks safe")
	b.clickToLoad(form + ` button[name=decision][value=allow]`)

	b.waitJS(done(contracts.PhaseCommitted), "the approved turn to commit")
	if n := eval[int](b, `document.querySelectorAll("form.approval").length`); n != 0 {
		t.Fatalf("%d approval forms left on the committed turn's page", n)
	}
	a, err := d.cl.Submission(ctx, sess.ID, su.ID)
	if err != nil || a.Phase != contracts.PhaseCommitted {
		t.Fatalf("the API says %s, %v", a.Phase, err)
	}
	// #decided, drawn from the committed turn's record: who decided, what
	// and why. (Whether the page drawn right after the decision still had
	// it in Approvals is a race with the tools phase, so it is not checked.)
	b.open(turnPath(sess.ID, su.ID))
	b.waitJS(`document.body.dataset.done === "true" && document.querySelector("ul#decided") !== null`, "the committed turn's page")
	decided := `ul#decided li[data-approval=` + jsString(aid) + `][data-decision="allow"]`
	var kept *contracts.Approval
	for _, x := range append(slices.Clone(a.Decided), a.Approvals...) {
		if x.ID == aid {
			kept = &x
		}
	}
	if kept == nil || kept.Decision != contracts.Allow || kept.DecidedBy != "owner" || kept.Reason != "looks safe" || kept.DecidedAt.IsZero() {
		t.Fatalf("the committed record keeps %+v; want approval %s allowed by owner (looks safe), with its time", kept, aid)
	}
	text := eval[string](b, `document.querySelector(`+jsString(decided)+`)?.textContent || ""`)
	if !strings.Contains(text, "by owner") || !strings.Contains(text, "looks safe") {
		t.Fatalf("#decided says %q; want the decision, who decided (owner) and the reason", text)
	}
	if at := eval[string](b, `document.querySelector(`+jsString(decided+` .decided-at time`)+`)?.getAttribute("datetime") || ""`); at == "" {
		t.Fatalf("#decided shows no time for the decision")
	}
	b.shot("turn-approved")
	if out, err := os.ReadFile(filepath.Join(d.data, "sandboxes", sess.ID, "approved.txt")); err != nil || string(out) != "approved\n" {
		t.Fatalf("approved.txt = %q, %v; the approved command ran once", out, err)
	}
	b.open("/console/approvals")
	b.waitJS(`document.querySelector("main#main") !== null && document.querySelector(`+jsString(form)+`) === null`, "the decided approval gone from /console/approvals")
}

// 3. A running turn (its tool call blocks until the test lets it go)
// cancelled from its page: the phase becomes CANCELLED.
func TestConsoleCancelsARunningTurn(t *testing.T) {
	d, b := startConsole(t)
	ctx := context.Background()
	sess, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:shell"})
	if err != nil {
		t.Fatal(err)
	}
	su, err := d.cl.Submit(ctx, sess.ID, "until [ -e release ]; do sleep 0.05; done; echo released", client.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(d.data, "sandboxes", sess.ID, "release")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o600) }) // a command the cancel missed still ends

	b.open(turnPath(sess.ID, su.ID))
	b.waitJS(`document.querySelector('ol#timeline li.ev[data-type="tool_started"]') !== null`, "the blocking tool call to start")
	if ph := eval[string](b, `document.querySelector("#phase").dataset.phase`); ph != string(contracts.PhaseTools) {
		t.Fatalf("#phase is %q while the tool runs; want TOOLS", ph)
	}
	b.clickToLoad(`form#cancel #cancel-btn`)
	b.waitJS(done(contracts.PhaseCancelled), "the turn to end CANCELLED on its page")
	b.shot("turn-cancelled")
	got, err := d.cl.Submission(ctx, sess.ID, su.ID)
	if err != nil || got.Phase != contracts.PhaseCancelled {
		t.Fatalf("the API says %s, %v; want CANCELLED", got.Phase, err)
	}
	if shown := eval[bool](b, `document.querySelector("#cancel-btn")?.checkVisibility() === true`); shown {
		t.Fatal("the cancelled turn's page still offers to cancel it")
	}
}

// 4. After two turns, a fork from the middle node (the first answer): the
// tree shows a new branch beside the second turn.
func TestConsoleForksFromAMiddleNode(t *testing.T) {
	d, b := startConsole(t)
	ctx := context.Background()
	sess, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:plain"})
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	for _, p := range []string{"first question", "second question"} {
		su, err := d.cl.Submit(ctx, sess.ID, p, client.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := waitDone(t, ctx, d.cl, sess.ID, su.ID); got.Phase != contracts.PhaseCommitted {
			t.Fatalf("%s: %s", p, got.Phase)
		}
		first = append(first, su.ID)
	}
	var tr struct{ Nodes []contracts.Node }
	for n, err := range client.All(func(cursor string) (client.Page[contracts.Node], error) {
		return d.cl.Transcript(ctx, sess.ID, client.TranscriptOptions{ListOptions: client.ListOptions{Cursor: cursor}})
	}) {
		if err != nil {
			t.Fatal(err)
		}
		tr.Nodes = append(tr.Nodes, n)
	}
	if len(tr.Nodes) != 4 || tr.Nodes[1].Role != contracts.RoleAssistant {
		t.Fatalf("transcript %+v; want user, assistant, user, assistant", tr.Nodes)
	}
	middle := tr.Nodes[1].ID

	b.open("/console/sessions/" + sess.ID)
	b.waitJS(`document.querySelectorAll("ul#tree li.node[data-node]").length === 4`, "the four nodes in #tree")
	// each node under its parent: a chain of four, the last the head
	parents := treeParents(b)
	for i, n := range tr.Nodes {
		if parents[n.ID] != n.Parent {
			t.Fatalf("#tree puts %s (%s) under %q; its parent is %q", n.ID, n.Role, parents[n.ID], n.Parent)
		}
		if head := eval[string](b, `document.querySelector('li.node[data-node=`+jsString(n.ID)+`]').dataset.head || ""`); (head == "true") != (i == 3) {
			t.Fatalf("node %d: data-head=%q", i, head)
		}
	}
	b.click(`button.fork[data-node=` + jsString(middle) + `]`)
	b.waitJS(`document.querySelector("form#fork") !== null && document.querySelector("form#fork").checkVisibility() && document.querySelector("form#fork input[name=parent]").value === `+jsString(middle),
		"the fork form, for the middle node")
	b.fill(`form#fork textarea[name=prompt]`, "another way")
	b.clickToLoad(`#fork-submit`)
	b.waitJS(`location.pathname.includes("/turns/") || document.querySelectorAll("table#turns tr[data-submission]").length === 3`, "the forked turn")

	var forked string
	for _, s := range submissionsOf(t, ctx, d.cl, sess.ID) {
		if !slices.Contains(first, s.ID) {
			forked = s.ID
		}
	}
	if forked == "" {
		t.Fatal("no third submission after the fork")
	}
	if got := waitDone(t, ctx, d.cl, sess.ID, forked); got.Phase != contracts.PhaseCommitted || got.Parent != middle {
		t.Fatalf("the forked turn: %s from %q; want COMMITTED from %s", got.Phase, got.Parent, middle)
	}
	b.open("/console/sessions/" + sess.ID)
	b.waitJS(`document.querySelectorAll("ul#tree li.node[data-node]").length === 6`, "the two new nodes in #tree")
	parents = treeParents(b)
	var children []string
	for id, p := range parents {
		if p == middle {
			children = append(children, id)
		}
	}
	if len(children) != 2 || !slices.Contains(children, tr.Nodes[2].ID) {
		t.Fatalf("the middle node's children in #tree: %v; want the second question and the fork's, side by side", children)
	}
	newUser := children[0]
	if newUser == tr.Nodes[2].ID {
		newUser = children[1]
	}
	// drawn as a branch: both children inside the middle node's item, in
	// branches of their own
	for _, c := range children {
		in := eval[bool](b, `document.querySelector('li.node[data-node=`+jsString(middle)+`] li.node[data-node=`+jsString(c)+`]') !== null`)
		if !in {
			t.Fatalf("node %s is not drawn inside the middle node %s it branches from", c, middle)
		}
	}
	if n := eval[int](b, `document.querySelector('li.node[data-node=`+jsString(middle)+`]').querySelectorAll(":scope > ul.branches > li.branch").length`); n != 2 {
		t.Fatalf("the middle node shows %d branches; want 2", n)
	}
	if role := eval[string](b, `document.querySelector('li.node[data-node=`+jsString(newUser)+`]').dataset.role`); role != string(contracts.RoleUser) {
		t.Fatalf("the fork's first node has role %q", role)
	}
	head := eval[string](b, `document.querySelector('ul#tree li.node[data-head="true"]')?.dataset.node || ""`)
	if parents[head] != newUser {
		t.Fatalf("the head %q is under %q; want the fork's answer, under %s", head, parents[head], newUser)
	}
	b.shot("session-tree", "#tree-h")
}

// treeParents maps each node in #tree to its data-parent ("" at the root).
func treeParents(b *browser) map[string]string {
	b.t.Helper()
	pairs := eval[[][]string](b, `[...document.querySelectorAll("ul#tree li.node[data-node]")].map(li => [li.dataset.node, li.dataset.parent || ""])`)
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		m[p[0]] = p[1]
	}
	return m
}

// fanOut20 starts 20 agent nodes at once and waits for all of them.
const fanOut20 = `def main(input):
    rs = wait([start("part %d" % i, model="scripted:plain", key="p%d" % i) for i in range(20)])
    return len([r for r in rs if r.ok])
`

// 5. A 20-node workflow run's graph: 20 nodes, each with its state and a
// link to its turn, and the run's status; then the schedules and usage
// pages with what the run left.
func TestConsoleShowsAWorkflowGraph(t *testing.T) {
	d, b := startConsole(t)
	ctx := context.Background()
	wf, err := d.cl.CreateWorkflow(ctx, "fan-out-20", fanOut20)
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.cl.StartRun(ctx, wf.ID, client.RunOptions{Input: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}

	b.open("/console/workflows")
	b.waitJS(`document.querySelector("main#main").textContent.includes("fan-out-20")`, "the workflow on /console/workflows")
	b.shot("workflows")

	// The graph page is drawn once, not live: open it when the run has ended.
	if got := waitRun(t, b.ctx, d.cl, wf.ID, run.ID); got.Status != contracts.RunSucceeded || string(got.Result) != "20" {
		t.Fatalf("the run: %s %s %s; want SUCCEEDED 20", got.Status, got.Result, got.Error)
	}
	b.open("/console/workflows/" + wf.ID + "/runs/" + run.ID)
	b.waitJS(`document.querySelectorAll("svg#graph g.node[data-node][data-state]").length === 20`, "20 nodes in the run's graph")
	b.waitJS(`document.querySelector("#run-status")?.dataset.status === "SUCCEEDED"`, "the run's status SUCCEEDED")
	b.shot("workflow-graph")
	states := eval[[]string](b, `[...document.querySelectorAll("svg#graph g.node")].map(g => g.dataset.state)`)
	for _, s := range states {
		if s != "done" {
			t.Fatalf("node states %v: want all 20 done", states)
		}
	}
	links := eval[[]string](b, `[...document.querySelectorAll("svg#graph g.node")].map(g =>
		(g.closest("a") || g.querySelector("a"))?.getAttribute("href") || "")`)
	seen := map[string]bool{}
	for _, l := range links {
		if !strings.Contains(l, "/turns/sub_") || seen[l] {
			t.Fatalf("node links %v: want each node linked to its own turn", links)
		}
		seen[l] = true
	}
	// one node's link opens its turn's page
	b.clickToLoad(`svg#graph g.node`) // the first
	b.waitJS(`location.pathname.includes("/turns/") && `+done(contracts.PhaseCommitted), "a node's turn page")

	sch, err := d.cl.CreateSchedule(ctx, wf.ID, "rate(1 hour)", nil)
	if err != nil {
		t.Fatal(err)
	}
	b.open("/console/schedules")
	srow := `table#schedules tr[data-schedule=` + jsString(sch.ID) + `]`
	b.waitJS(`document.querySelector(`+jsString(srow)+`)?.dataset.paused === "false"`, "the active schedule in table#schedules")
	b.shot("schedules")
	b.clickToLoad(srow + ` form[data-action="pause"] button`)
	b.waitJS(`document.querySelector(`+jsString(srow)+`)?.dataset.paused === "true"`, "the schedule paused from the page")
	if got, err := d.cl.Schedule(ctx, wf.ID, sch.ID); err != nil || !got.Paused {
		t.Fatalf("the API says paused=%v, %v; want paused", got.Paused, err)
	}

	b.open("/console/usage")
	b.waitJS(`document.querySelector('table#usage-principals tr[data-principal="owner"]') !== null && document.querySelectorAll("table#usage-turns tbody tr[data-submission]").length > 0`,
		"owner's usage and the turns in the usage tables")
	if turns := eval[string](b, `document.querySelector('table#usage-principals tr[data-principal="owner"] td:nth-child(2)').textContent.trim()`); turns != "20" {
		t.Errorf("usage says owner ran %s turns; the run's 20 nodes are 20 turns", turns)
	}
	b.shot("usage")
}

// waitRun asks the API for the run every 50 ms until it has ended (the
// API has no long-poll for runs), under ctx's deadline.
func waitRun(t *testing.T, ctx context.Context, cl *client.Client, wid, rid string) contracts.WorkflowRun {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		v, err := cl.Run(ctx, wid, rid, client.ListOptions{})
		if err != nil {
			t.Fatalf("waiting for run %s: %v", rid, err)
		}
		if v.Status.Terminal() {
			return v.WorkflowRun
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("run %s still %s at the deadline", rid, v.Status)
		}
	}
}

// 6. Accessibility smoke: Tab moves from the skip link through the nav
// links in order, and the skip link leads into #main; the sessions and turn
// pages fit a 390 px phone and a 1280 px screen without scrolling
// sideways; <time> shows local time, not the raw RFC 3339.
func TestConsoleAccessibility(t *testing.T) {
	d, b := startConsole(t)
	ctx := context.Background()
	sess, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:demo"})
	if err != nil {
		t.Fatal(err)
	}
	su, err := d.cl.Submit(ctx, sess.ID, "do the demo, with a long prompt that a narrow screen has to wrap instead of scrolling sideways: "+strings.Repeat("wrap-me ", 20), client.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitDone(t, ctx, d.cl, sess.ID, su.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("the demo turn: %s", got.Phase)
	}

	b.open("/console/")
	links := eval[[]string](b, `[...document.querySelectorAll("nav#nav a[href]")].map(a => a.getAttribute("href"))`)
	if len(links) < 5 {
		t.Fatalf("nav#nav links %v; want sessions, approvals, workflows, schedules and usage", links)
	}
	if href := eval[string](b, `document.querySelector("a.skip")?.getAttribute("href") || ""`); href != "#main" {
		t.Fatalf("a.skip href %q; want #main", href)
	}
	// from a fresh page, the first Tab lands on the skip link, then each nav link in order
	const focused = `(() => { const e = document.activeElement; return e ? e.tagName.toLowerCase() + (e.className ? "." + e.className : "") + " " + (e.getAttribute("href") || "") : "" })()`
	b.key("\t")
	if f := eval[string](b, focused); !strings.HasPrefix(f, "a.skip") {
		t.Fatalf("the first Tab focused %q; want the skip link", f)
	}
	// then the header's links up to the nav (the brand), then each nav link in order
	const inNav = `document.activeElement?.closest("nav#nav") !== null`
	for presses := 2; ; presses++ {
		b.key("\t")
		if eval[bool](b, inNav) {
			break
		}
		if presses > 3 || !eval[bool](b, `document.activeElement?.closest("header") !== null`) {
			t.Fatalf("Tab %d focused %q before reaching nav#nav", presses, eval[string](b, focused))
		}
	}
	for i, href := range links {
		if i > 0 {
			b.key("\t")
		}
		if !eval[bool](b, inNav+` && document.activeElement.getAttribute("href") === `+jsString(href)) {
			t.Fatalf("Tab focused %q; want nav link %d, %s", eval[string](b, focused), i+1, href)
		}
	}
	// the skip link, activated with Enter, moves the next Tab into #main
	b.open("/console/")
	b.key("\t")
	b.key("\r")
	b.waitJS(`location.hash === "#main"`, "the skip link to go to #main")
	b.key("\t")
	if in := eval[bool](b, `document.querySelector("main#main").contains(document.activeElement)`); !in {
		t.Fatalf("after the skip link, Tab focused %q, outside #main", eval[string](b, focused))
	}

	pages := []struct{ name, path string }{
		{"sessions", "/console/"},
		{"session", "/console/sessions/" + sess.ID},
		{"turn", turnPath(sess.ID, su.ID)},
	}
	// every section the nav leads to fits too
	wide := append(slices.Clone(pages), struct{ name, path string }{"approvals", "/console/approvals"},
		struct{ name, path string }{"workflows", "/console/workflows"}, struct{ name, path string }{"schedules", "/console/schedules"},
		struct{ name, path string }{"usage", "/console/usage"})
	for _, vp := range []struct{ w, h int64 }{{390, 844}, {1280, 800}} {
		b.viewport(vp.w, vp.h)
		for _, p := range wide {
			b.open(p.path)
			b.waitJS(`document.querySelector("main#main") !== null && innerWidth === `+strconv.FormatInt(vp.w, 10), p.name+" at its width")
			over := eval[string](b, overflowing)
			known, isKnown := knownOverflow[fmt.Sprintf("%s@%d", p.name, vp.w)]
			switch {
			case over != "" && isKnown:
				t.Logf("KNOWN CONSOLE BUG, not failing the test: %s at %d×%d scrolls sideways (%s): %s", p.name, vp.w, vp.h, known, over)
			case over != "":
				t.Errorf("%s at %d×%d scrolls sideways: %s", p.name, vp.w, vp.h, over)
			case isKnown:
				t.Errorf("%s at %d×%d no longer scrolls sideways: take it out of knownOverflow", p.name, vp.w, vp.h)
			}
			if vp.w == 390 && slices.Contains(pages, p) {
				b.shot(p.name + "-390")
			}
		}
	}
	// <time> shows local time once the page's script ran
	for _, p := range pages {
		b.open(p.path)
		b.waitJS(`document.querySelectorAll("time[datetime]").length > 0 && [...document.querySelectorAll("time[datetime]")].every(e =>
			e.textContent.trim() !== "" && e.textContent.trim() !== e.getAttribute("datetime"))`, "every <time> on "+p.name+" rewritten to local time")
	}
	if n := eval[int](b, `document.querySelectorAll('meta[name="viewport"][content*="width=device-width"]').length`); n != 1 {
		t.Errorf("%d <meta name=viewport content=width=device-width>: a phone would lay the page out 980 px wide", n)
	}
}

// knownOverflow holds the pages (name@width) known to scroll sideways, with
// the console bug that does it: logged, not failed, until the console is
// fixed — and a failure once the page fits, so the entry goes.
var knownOverflow = map[string]string{}

// overflowing is "" when the page does not scroll sideways; else its
// scroll width and the elements that stick out past the viewport without a
// scrolling or clipping container to hold them (a table inside its own
// scrolling container is fine; an absolutely positioned element is held
// only by a container that also holds its containing block).
const overflowing = `(() => {
  const w = innerWidth, sw = document.documentElement.scrollWidth;
  if (sw <= w) return "";
  const clips = p => ["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(p).overflowX);
  const out = [];
  for (const e of document.querySelectorAll("body *")) {
    const r = e.getBoundingClientRect();
    if (r.right <= w + 1) continue;
    const pos = getComputedStyle(e).position, cb = pos === "fixed" ? null : pos === "absolute" ? e.offsetParent : e.parentElement;
    let held = false;
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      if (clips(p) && cb && (p === cb || p.contains(cb))) { held = true; break }
    }
    if (!held) out.push(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
      (typeof e.className === "string" && e.className ? "." + e.className.trim().split(/\s+/).join(".") : "") +
      (pos === "absolute" || pos === "fixed" ? " (" + pos + ")" : "") + " right=" + Math.round(r.right));
  }
  return "scrollWidth " + sw + " > innerWidth " + w + "; sticking out: " + out.slice(0, 8).join(", ");
})()`
