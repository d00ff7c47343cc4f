package console

import (
	"net/http"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Bounds of the sessions page: a page shows PageSize sessions; a search
// (a filter) reads the API's pages of PageSize until it has found a page
// of matches or read MaxSearched sessions, then offers the next cursor.
const (
	PageSize    = 20
	MaxSearched = 200
)

// Session states the sessions page filters on.
const (
	StateIdle    = "idle"    // no turn active
	StateRunning = "running" // a turn active and not waiting on a decision
	StateParked  = "parked"  // the active turn waits on an approval
)

// sessionSummary is a session as GET /v1/sessions lists it.
type sessionSummary = contracts.SessionSummary

// sessionView is GET /v1/sessions/{id}.
type sessionView = contracts.SessionView

// turnSummary is a submission as GET …/submissions lists it.
type turnSummary = contracts.SubmissionSummary

type sessionRow struct {
	sessionSummary
	Title   string // its first prompt
	State   string
	Pending int
}

type sessionsData struct {
	frame
	Q, Owner, State string
	States          []string
	Rows            []sessionRow
	Searched        int // sessions read for a search (0: no filter)
	Next            string
}

// sessionsPage lists the principal's sessions (an operator's: everyone's),
// newest first; ?q= keeps those whose id or title (first prompt) holds it,
// ?owner= one owner's, ?state= idle, running or parked.
func (c *Console) sessionsPage(w http.ResponseWriter, r *http.Request) {
	me, err := c.whoami(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	d := &sessionsData{frame: frame{Title: "Sessions", Nav: "sessions", Who: me},
		Q: strings.TrimSpace(q.Get("q")), Owner: strings.TrimSpace(q.Get("owner")), State: q.Get("state"),
		States: []string{StateRunning, StateParked, StateIdle}}
	switch d.State {
	case "", StateIdle, StateRunning, StateParked:
	default:
		c.errorPage(w, r, http.StatusBadRequest, "invalid_request", "state="+clip(d.State, 40)+": want running, parked or idle.")
		return
	}
	filtered := d.Q != "" || d.Owner != "" || d.State != ""
	cursor := q.Get("cursor")
	for {
		var pg struct {
			Sessions []sessionSummary `json:"sessions"`
			Next     string           `json:"next_cursor"`
		}
		if err := c.get(r, query("/v1/sessions", "limit", "20", "cursor", cursor), &pg); err != nil {
			c.fail(w, r, err)
			return
		}
		for _, s := range pg.Sessions {
			if d.Owner != "" && s.Owner != d.Owner {
				continue
			}
			row, err := c.sessionRow(r, s)
			if err != nil {
				c.fail(w, r, err)
				return
			}
			if d.State != "" && row.State != d.State || d.Q != "" && !matches(row, d.Q) {
				continue
			}
			d.Rows = append(d.Rows, row)
		}
		if filtered {
			d.Searched += len(pg.Sessions)
		}
		cursor = pg.Next
		if !filtered || cursor == "" || len(d.Rows) >= PageSize || d.Searched >= MaxSearched {
			break
		}
	}
	if cursor != "" {
		d.Next = query(Prefix, "q", d.Q, "owner", d.Owner, "state", d.State, "cursor", cursor)
	}
	c.render(w, r, http.StatusOK, "sessions", d)
}

func matches(row sessionRow, q string) bool {
	q = strings.ToLower(q)
	return strings.Contains(strings.ToLower(row.ID), q) || strings.Contains(strings.ToLower(row.Title), q)
}

// sessionRow adds a session's title (its first turn's prompt) and state.
func (c *Console) sessionRow(r *http.Request, s sessionSummary) (sessionRow, error) {
	row := sessionRow{sessionSummary: s, State: StateIdle}
	var first struct {
		Submissions []turnSummary `json:"submissions"`
	}
	if err := c.get(r, query("/v1/sessions/"+seg(s.ID)+"/submissions", "limit", "1"), &first); err != nil {
		return row, err
	}
	if len(first.Submissions) > 0 {
		row.Title = first.Submissions[0].Prompt
	}
	if s.Active == "" {
		return row, nil
	}
	var full sessionView
	if err := c.get(r, "/v1/sessions/"+seg(s.ID), &full); err != nil {
		return row, err
	}
	row.State, row.Pending = StateRunning, len(full.PendingApprovals)
	if row.Pending > 0 {
		row.State = StateParked
	}
	return row, nil
}

type approvalForm struct {
	Session, Turn string
	Approval      contracts.Approval
	Input         string // the tool's input, a command shown as itself
	Back          string
}

func newApprovalForm(session, turn string, a contracts.Approval, back string) approvalForm {
	return approvalForm{Session: session, Turn: turn, Approval: a, Input: inputText(a.Input), Back: back}
}

type sessionData struct {
	frame
	Session   sessionView
	Tree      []treeItem
	TreeCount int
	TreeMore  bool // the tree was cut at MaxTreeNodes
	Turns     []turnSummary
	TurnsNext string
	Approvals []approvalForm
	Nonce     string
}

// sessionPage shows a session: its transcript as a tree, its turns, its
// pending approvals and the forms to submit a prompt or fork.
func (c *Console) sessionPage(w http.ResponseWriter, r *http.Request) {
	me, err := c.whoami(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	d := &sessionData{frame: frame{Title: "Session " + id, Nav: "sessions", Who: me}, Nonce: nonce()}
	if err := c.get(r, "/v1/sessions/"+seg(id), &d.Session); err != nil {
		c.fail(w, r, err)
		return
	}
	nodes, more, err := c.tree(r, id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d.Tree, d.TreeCount, d.TreeMore = buildTree(nodes, d.Session.Head), len(nodes), more
	var turns struct {
		Submissions []turnSummary `json:"submissions"`
		Next        string        `json:"next_cursor"`
	}
	if err := c.get(r, query("/v1/sessions/"+seg(id)+"/submissions", "limit", "100", "cursor", r.URL.Query().Get("turns")), &turns); err != nil {
		c.fail(w, r, err)
		return
	}
	d.Turns = turns.Submissions
	if turns.Next != "" {
		d.TurnsNext = query(sessionPath(id), "turns", turns.Next) + "#turns"
	}
	for _, a := range d.Session.PendingApprovals {
		d.Approvals = append(d.Approvals, newApprovalForm(id, d.Session.Active, a, sessionPath(id)))
	}
	c.render(w, r, http.StatusOK, "session", d)
}

// submit accepts a prompt in the session (POST …/submit: prompt, and
// parent to fork from a node) and shows the new turn. The Idempotency-Key
// derives from the form's nonce, parent and prompt: a form sent twice (a
// double click, a reload after a lost answer) is one turn.
func (c *Console) submit(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	prompt, parent := r.PostFormValue("prompt"), strings.TrimSpace(r.PostFormValue("parent"))
	body := map[string]string{"prompt": prompt}
	if parent != "" {
		body["parent"] = parent
	}
	var hdr []string
	if n := r.PostFormValue("nonce"); n != "" {
		hdr = []string{"Idempotency-Key", idempotencyKey(n, parent, prompt)}
	}
	var sub contracts.Submission
	if err := c.call(r, http.MethodPost, "/v1/sessions/"+seg(id)+"/submissions", body, &sub, hdr...); err != nil {
		c.fail(w, r, err)
		return
	}
	redirect(w, r, turnPath(id, sub.ID))
}
