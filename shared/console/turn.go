package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

type turnData struct {
	frame
	Session  string
	Sub      contracts.Submission
	Timeline []entry
	Cut      bool // the journal was longer than MaxTimelineEvents
	Stream   []streamText
	After    int64 // the last event rendered: where the live stream resumes
	Pending  []approvalForm
	Decided  []contracts.Approval
	Events   string // the console's events route for this turn
	Terminal bool
	CanRetry bool
}

// turnPage shows one turn: its record, its timeline from the journal, the
// text it streamed (live until it ends), its approvals and the cancel and
// retry forms.
func (c *Console) turnPage(w http.ResponseWriter, r *http.Request) {
	me, err := c.whoami(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	id, sid := r.PathValue("id"), r.PathValue("sid")
	d := &turnData{frame: frame{Title: "Turn " + sid, Nav: "sessions", Who: me}, Session: id}
	if err := c.get(r, "/v1/sessions/"+seg(id)+"/submissions/"+seg(sid), &d.Sub); err != nil {
		c.fail(w, r, err)
		return
	}
	evs, cut, err := c.events(r, id, sid)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d.Timeline, d.Stream = timeline(evs)
	d.Cut = cut
	if n := len(evs); n > 0 {
		d.After = evs[n-1].Seq
	}
	d.Terminal, d.CanRetry = d.Sub.Phase.Terminal(), d.Sub.Phase == contracts.PhaseFailed
	d.Done = d.Terminal && !cut
	d.Events = turnPath(id, sid) + "/events"
	here := turnPath(id, sid)
	for _, a := range d.Sub.Approvals {
		if a.Decision == "" {
			d.Pending = append(d.Pending, newApprovalForm(id, "", a, here))
		} else {
			d.Decided = append(d.Decided, a)
		}
	}
	d.Decided = append(append([]contracts.Approval(nil), d.Sub.Decided...), d.Decided...)
	sort.SliceStable(d.Decided, func(i, j int) bool { return d.Decided[i].Step < d.Decided[j].Step })
	c.render(w, r, http.StatusOK, "turn", d)
}

// decide allows or denies an approval (POST …/approvals/{aid}: decision,
// reason, back) and returns to the page it was decided on.
func (c *Console) decide(w http.ResponseWriter, r *http.Request) {
	id, aid := r.PathValue("id"), r.PathValue("aid")
	body := map[string]string{"decision": r.PostFormValue("decision")}
	if reason := strings.TrimSpace(r.PostFormValue("reason")); reason != "" {
		body["reason"] = reason
	}
	if err := c.call(r, http.MethodPost, "/v1/sessions/"+seg(id)+"/approvals/"+seg(aid), body, nil); err != nil {
		c.fail(w, r, err)
		return
	}
	redirect(w, r, back(r, sessionPath(id)))
}

// cancel cancels a turn (POST …/turns/{sid}/cancel: reason).
func (c *Console) cancel(w http.ResponseWriter, r *http.Request) {
	id, sid := r.PathValue("id"), r.PathValue("sid")
	body := map[string]string{}
	if reason := strings.TrimSpace(r.PostFormValue("reason")); reason != "" {
		body["reason"] = reason
	}
	if err := c.call(r, http.MethodPost, "/v1/sessions/"+seg(id)+"/submissions/"+seg(sid)+"/cancel", body, nil); err != nil {
		c.fail(w, r, err)
		return
	}
	redirect(w, r, turnPath(id, sid))
}

// retry retries a FAILED turn (POST …/turns/{sid}/retry), with the limits
// the form raises (max_steps, max_tokens, max_wall_seconds; empty = keep).
func (c *Console) retry(w http.ResponseWriter, r *http.Request) {
	id, sid := r.PathValue("id"), r.PathValue("sid")
	limits := map[string]int{}
	for _, k := range []string{"max_steps", "max_tokens", "max_wall_seconds"} {
		v := strings.TrimSpace(r.PostFormValue(k))
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			c.errorPage(w, r, http.StatusBadRequest, "invalid_request", k+"="+clip(v, 40)+": want a whole number of at least 1, or leave it empty to keep the turn's limit.")
			return
		}
		limits[k] = n
	}
	body := map[string]any{}
	if len(limits) > 0 {
		body["limits"] = limits
	}
	if err := c.call(r, http.MethodPost, "/v1/sessions/"+seg(id)+"/submissions/"+seg(sid)+"/retry", body, nil); err != nil {
		c.fail(w, r, err)
		return
	}
	redirect(w, r, turnPath(id, sid))
}

// nonce is a random id for a form, so that sending it twice is one action.
func nonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// idempotencyKey is the Idempotency-Key of a submit form: the same form
// (nonce), parent and prompt are the same turn.
func idempotencyKey(nonce, parent, prompt string) string {
	h := sha256.Sum256([]byte(nonce + "\x00" + parent + "\x00" + prompt))
	return "console-" + hex.EncodeToString(h[:16])
}
