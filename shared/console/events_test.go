package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/console"
	"github.com/cairnrun/cairn/shared/contracts"
)

type sseMessage struct{ id, event, data string }

// sse opens a console events route as who, as an EventSource does, and
// hands each message to next until next says stop or the stream ends.
func (f *fixture) sse(t *testing.T, who, path, lastID string, next func(sseMessage) bool) (*http.Response, []sseMessage) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+path, nil)
	f.browse(req, who)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := f.cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []sseMessage
	var m sseMessage
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "":
			if m.event != "" {
				out = append(out, m)
				if !next(m) {
					return resp, out
				}
			}
			m = sseMessage{}
		case strings.HasPrefix(line, "id: "):
			m.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			m.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			m.data = line[6:]
		}
	}
	return resp, out
}

// The console's events route streams a turn's events as the API does —
// live: a stream opened on a parked turn goes on with what the turn does
// after its approval, to the end.
func TestEventsRouteStreamsATurn(t *testing.T) {
	f := newFixture(t)
	session, sub, aid := f.parked(t, "alice")
	path := "/console/sessions/" + session + "/turns/" + sub + "/events"
	decided := false
	resp, msgs := f.sse(t, "alice", path, "", func(m sseMessage) bool {
		if m.event == "approval_needed" && !decided { // decide while the stream is open
			decided = true
			if st := f.api(t, "alice", http.MethodPost, "/v1/sessions/"+session+"/approvals/"+aid, `{"decision":"allow"}`, nil); st != http.StatusOK {
				t.Errorf("deciding: %d", st)
			}
			f.h.Drain()
		}
		return m.event != "end"
	})
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("%d %s", resp.StatusCode, ct)
	}
	var types []string
	for _, m := range msgs {
		types = append(types, m.event)
	}
	got := strings.Join(types, ",")
	for _, want := range []string{"step", "text_delta", "approval_needed", "tool_started", "tool_finished", "committed", "end"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the stream %s has no %s", got, want)
		}
	}
	if last := msgs[len(msgs)-1]; last.event != "end" || !strings.Contains(last.data, "COMMITTED") {
		t.Fatalf("the stream ended with %+v", last)
	}
	// Last-Event-ID resumes exactly after that event.
	_, rest := f.sse(t, "alice", path, msgs[1].id, func(m sseMessage) bool { return m.event != "end" })
	if len(rest) != len(msgs)-2 || rest[0].id != msgs[2].id {
		t.Fatalf("resumed after %s: %d messages from %s, want %d from %s", msgs[1].id, len(rest), rest[0].id, len(msgs)-2, msgs[2].id)
	}

	// Without Accept: text/event-stream: the JSON long-poll, passed through.
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path+"?after=2", nil)
	f.browse(req, "alice")
	req.Header.Set("Accept", "application/json")
	p := f.do(t, req)
	var poll struct {
		Events []contracts.Event `json:"events"`
		Phase  string            `json:"phase"`
		Done   bool              `json:"done"`
	}
	if err := json.Unmarshal([]byte(p.body), &poll); err != nil || p.status != 200 || !poll.Done || poll.Phase != "COMMITTED" || poll.Events[0].Seq != 3 {
		t.Fatalf("long-poll: %d %s", p.status, clip(p.body))
	}

	// Another principal's turn is the API's 404; no credentials its 401.
	for who, want := range map[string]int{"bob": http.StatusNotFound, "": http.StatusUnauthorized} {
		if resp, _ := f.sse(t, who, path, "", func(sseMessage) bool { return false }); resp.StatusCode != want {
			t.Fatalf("%q streaming alice's turn: %d, want %d", who, resp.StatusCode, want)
		}
	}
}

// Where responses are delivered whole (API Gateway) the API refuses to
// stream with 406, and the console passes that on: its page then
// long-polls.
func TestEventsRouteRefusesToStreamWhereResponsesAreBuffered(t *testing.T) {
	f := newFixture(t)
	session, sub, _ := f.parked(t, "alice")
	req := httptest.NewRequest(http.MethodGet, "/console/sessions/"+session+"/turns/"+sub+"/events", nil)
	req = req.WithContext(contracts.WithBufferedResponse(req.Context()))
	req.Header.Set("Accept", "text/event-stream")
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: f.tok["alice"]})
	rec := httptest.NewRecorder()
	f.h.RT.API.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotAcceptable || !strings.Contains(rec.Body.String(), "not_acceptable") {
		t.Fatalf("buffered: %d %s", rec.Code, rec.Body.String())
	}
}
