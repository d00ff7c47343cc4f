package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// sseMessage is one parsed server-sent event.
type sseMessage struct {
	id, event, data string
}

// stream opens path as an event stream (lastID as Last-Event-ID unless
// ""), reads messages until stop says so or the stream ends, and returns
// them with the response's status and content type.
func (f *fixture) stream(t *testing.T, path, lastID string, stop func(sseMessage) bool) (int, string, []sseMessage) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []sseMessage
	var m sseMessage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if m.event != "" {
				out = append(out, m)
				if stop(m) {
					return resp.StatusCode, resp.Header.Get("Content-Type"), out
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
	return resp.StatusCode, resp.Header.Get("Content-Type"), out
}

func ended(m sseMessage) bool { return m.event == "end" }

// TestATurnStreamsAndResumes: a turn's events stream as SSE with id = seq
// and the journal event's type, then "end"; resuming with Last-Event-ID
// from any event yields exactly the rest, none twice, none missing — the
// same events the long-poll returns.
func TestATurnStreamsAndResumes(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:demo"}`)
	r := f.call(t, "POST", "/v1/sessions/"+sid+"/submissions", `{"prompt":"go"}`, nil)
	sub := r.body["id"].(string)
	path := "/v1/sessions/" + sid + "/submissions/" + sub + "/events"
	status, ctype, all := f.stream(t, path, "", ended)
	if status != 200 || !strings.HasPrefix(ctype, "text/event-stream") {
		t.Fatalf("%d %s", status, ctype)
	}
	if last := all[len(all)-1]; last.event != "end" || !strings.Contains(last.data, `"COMMITTED"`) {
		t.Fatalf("the stream ended with %+v", last)
	}
	evs := all[:len(all)-1]
	poll := f.call(t, "GET", path+"?after=0", "", nil)
	var page struct{ Events []contracts.Event }
	_ = json.Unmarshal([]byte(poll.raw), &page)
	if len(page.Events) != len(evs) || len(evs) < 5 {
		t.Fatalf("%d streamed events, %d by long-poll", len(evs), len(page.Events))
	}
	for i, m := range evs {
		var ev contracts.Event
		if err := json.Unmarshal([]byte(m.data), &ev); err != nil {
			t.Fatal(err)
		}
		if want := page.Events[i]; ev.Seq != want.Seq || m.id != jsonNum(float64(want.Seq)) || m.event != string(want.Type) {
			t.Fatalf("event %d: id %s type %s seq %d, want %d %s", i, m.id, m.event, ev.Seq, want.Seq, want.Type)
		}
	}
	for _, from := range []int{0, 2, len(evs) - 1} {
		_, _, rest := f.stream(t, path, evs[from].id, ended)
		if got, want := len(rest)-1, len(evs)-from-1; got != want || (want > 0 && rest[0].id != evs[from+1].id) {
			t.Fatalf("resumed after %s: %d events, want %d", evs[from].id, got, want)
		}
	}
}

// TestASessionStreamFollowsItsTurns: the session stream carries every turn
// in order, each closed by turn_end, and resumes across turns exactly.
func TestASessionStreamFollowsItsTurns(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:plain"}`)
	var subs []string
	for _, p := range []string{"one", "two"} {
		r := f.call(t, "POST", "/v1/sessions/"+sid+"/submissions", `{"prompt":"`+p+`"}`, nil)
		subs = append(subs, r.body["id"].(string))
	}
	turnEnds := 0
	untilSecondEnds := func(m sseMessage) bool {
		if m.event == "turn_end" {
			turnEnds++
		}
		return turnEnds == 2
	}
	_, _, all := f.stream(t, "/v1/sessions/"+sid+"/events", "", untilSecondEnds)
	var order []string
	for _, m := range all {
		sub, _, _ := strings.Cut(m.id, ":")
		if len(order) == 0 || order[len(order)-1] != sub {
			order = append(order, sub)
		}
	}
	if len(order) != 2 || order[0] != subs[0] || order[1] != subs[1] {
		t.Fatalf("turns in the stream %v, want %v", order, subs)
	}
	for i := 0; i < len(all)-1; i++ { // after the last, the stream waits for a next turn
		turnEnds = 0
		_, _, rest := f.stream(t, "/v1/sessions/"+sid+"/events", all[i].id, func(m sseMessage) bool {
			if m.event == "turn_end" {
				turnEnds++
			}
			return m.id == all[len(all)-1].id
		})
		if len(rest) != len(all)-i-1 || rest[0].id != all[i+1].id {
			t.Fatalf("resumed after %s: %d messages, want %d", all[i].id, len(rest), len(all)-i-1)
		}
	}
}

// TestStreamsRefuseWhatTheyCannotServe: a bad resume point is a 400 JSON
// error; an unknown turn or session a 404; the session route without
// Accept: text/event-stream lists the session's turns.
func TestStreamsRefuseWhatTheyCannotServe(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:plain"}`)
	r := f.call(t, "POST", "/v1/sessions/"+sid+"/submissions", `{"prompt":"x"}`, nil)
	sub := r.body["id"].(string)
	sse := map[string]string{"Accept": "text/event-stream"}
	for _, c := range []struct {
		path   string
		hdr    map[string]string
		status int
		code   string
	}{
		{"/v1/sessions/" + sid + "/submissions/" + sub + "/events", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "x"}, 400, "invalid_request"},
		{"/v1/sessions/" + sid + "/submissions/" + sub + "/events", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "-1"}, 400, "invalid_request"},
		{"/v1/sessions/" + sid + "/events", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "nocolon"}, 400, "invalid_request"},
		{"/v1/sessions/" + sid + "/events", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": sub + ":-3"}, 400, "invalid_request"},
		{"/v1/sessions/" + sid + "/submissions/sub_nope/events", sse, 404, "not_found"},
		{"/v1/sessions/ses_nope/events", sse, 404, "not_found"},
	} {
		got := f.call(t, "GET", c.path, "", c.hdr)
		code, _ := got.body["error"].(map[string]any)["code"].(string)
		if got.status != c.status || code != c.code {
			t.Errorf("%s %v: %d %s, want %d %s", c.path, c.hdr, got.status, got.raw, c.status, c.code)
		}
	}
	got := f.call(t, "GET", "/v1/sessions/"+sid+"/events", "", nil)
	turns, _ := got.body["turns"].([]any)
	if got.status != 200 || len(turns) != 1 || turns[0].(map[string]any)["id"] != sub {
		t.Errorf("the session route as JSON: %d %s", got.status, got.raw)
	}
}
