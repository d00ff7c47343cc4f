package backend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/aws/backend/streams"
	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// streamFn is the stream function as deployed: streams.New over the
// stack's table and bucket — its own clients, as another process — behind
// lambdafn.StreamHandler, the handler lambdaurl gives the function URL.
func streamFn(t *testing.T, s *stack) func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
	t.Helper()
	awsCfg := awstest.Config(t)
	h, err := streams.New(awstest.Context(t), streams.Config{Region: s.cfg.Region, Endpoint: s.cfg.Endpoint, Table: s.cfg.Table, Bucket: s.cfg.Bucket, AWS: &awsCfg})
	if err != nil {
		t.Fatal(err)
	}
	return lambdafn.StreamHandler("stream", h)
}

// sse is one server-sent message.
type sse struct{ id, event, data string }

// open invokes the stream function for path as caller and parses the
// streamed body into messages on a channel as they arrive (closed at the
// body's end). cancel ends the invocation's context.
func open(t *testing.T, fn func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error),
	path, caller string, hdr http.Header) (status int, msgs <-chan sse, body func() string, cancel func()) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	resp, err := fn(ctx, harness.URLEvent("GET", path, hdr, nil, caller))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Headers["Content-Type"] != "text/event-stream" {
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, nil, func() string { return string(raw) }, stop
	}
	ch := make(chan sse, 1000)
	go func() {
		defer close(ch)
		var m sse
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			switch l := sc.Text(); {
			case l == "":
				if m.event != "" {
					ch <- m
				}
				m = sse{}
			case strings.HasPrefix(l, "id: "):
				m.id = l[4:]
			case strings.HasPrefix(l, "event: "):
				m.event = l[7:]
			case strings.HasPrefix(l, "data: "):
				m.data = l[6:]
			}
		}
	}()
	return resp.StatusCode, ch, nil, stop
}

// next is the next message, failing after 60 s (a buffered response would
// deliver nothing until the turn ended).
func next(t *testing.T, msgs <-chan sse) sse {
	t.Helper()
	select {
	case m, ok := <-msgs:
		if !ok {
			t.Fatal("the stream ended")
		}
		return m
	case <-time.After(60 * time.Second):
		t.Fatal("no message within 60 s")
	}
	return sse{}
}

// TestStreamFunctionStreamsATurnOnEndpoint runs the stream function's
// handler (lambdaurl, the function URL's IAM caller) against the real
// backend on the endpoint, beside the phase functions in the harness: a
// turn's events arrive while it is parked for an approval — streamed, not
// buffered — then the rest and "end" once it commits; Last-Event-ID
// resumes exactly; another principal's session is a 404, and so is every
// route but the event streams.
func TestStreamFunctionStreamsATurnOnEndpoint(t *testing.T) {
	s := newStack(t, 5*time.Second, 5, nil)
	fn := streamFn(t, s)
	sid, sub := s.submit(contracts.SessionSpec{Model: "scripted:approval", Policy: contracts.Policy{Tools: map[string]contracts.Decision{"bash": contracts.Ask}}})
	aid := ""
	for round := 0; aid == ""; round++ {
		if round == 1000 {
			t.Fatal("the turn never parked")
		}
		for _, f := range s.harness.Functions {
			if _, err := s.harness.Once(context.Background(), f); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.rt.Ports.Journal.GetSubmission(context.Background(), sub)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Approvals) > 0 {
			aid = got.Approvals[0].ID
		} else if got.Phase.Terminal() {
			t.Fatalf("ended %s without parking", got.Phase)
		}
	}

	// The function URL's caller: the IAM ARN spelled as a function URL may
	// report it (iam for sts), the same principal as the API's e2eCaller.
	caller := strings.Replace(e2eCaller, ":sts::", ":iam::", 1)
	sseHdr := http.Header{"Accept": {"text/event-stream"}}
	turn := "/v1/sessions/" + sid + "/submissions/" + sub + "/events"
	status, msgs, _, _ := open(t, fn, turn, caller, sseHdr)
	if status != 200 || msgs == nil {
		t.Fatalf("stream: %d", status)
	}
	var seen []sse
	for {
		m := next(t, msgs)
		seen = append(seen, m)
		if m.event == contracts.EventApprovalNeeded {
			break
		}
	}
	if got, _ := s.rt.Ports.Journal.GetSubmission(context.Background(), sub); got.Phase.Terminal() {
		t.Fatalf("the turn is %s: the approval event must arrive while it is parked", got.Phase)
	}
	if code, out := s.call("POST", "/v1/sessions/"+sid+"/approvals/"+aid, map[string]string{"decision": "allow"}, nil); code != 200 {
		t.Fatalf("approve: %d %v", code, out)
	}
	s.until(sub, 60*time.Second)
	for last := seen[len(seen)-1]; last.event != "end"; last = seen[len(seen)-1] {
		seen = append(seen, next(t, msgs))
	}
	if end := seen[len(seen)-1]; !strings.Contains(end.data, `"COMMITTED"`) {
		t.Fatalf("end %+v", end)
	}
	evs := seen[:len(seen)-1]
	prev := int64(0)
	for _, m := range evs {
		n, err := strconv.ParseInt(m.id, 10, 64)
		if err != nil || n <= prev {
			t.Fatalf("event ids not rising: %v", evs)
		}
		prev = n
	}
	all, err := s.rt.Ports.Events.ListEvents(context.Background(), sub, 0, 0)
	if err != nil || len(all) != len(evs) {
		t.Fatalf("streamed %d events, the log has %d (%v)", len(evs), len(all), err)
	}

	// Resume after the approval event: exactly the rest, then end.
	from := 0
	for evs[from].event != contracts.EventApprovalNeeded {
		from++
	}
	t.Logf("streamed %d events, %d of them while the turn was parked", len(evs), from+1)
	_, again, _, _ := open(t, fn, turn, caller, http.Header{"Accept": {"text/event-stream"}, "Last-Event-ID": {evs[from].id}})
	var rest []sse
	for m := range again {
		rest = append(rest, m)
	}
	if len(rest) != len(evs)-from || rest[0].id != evs[from+1].id || rest[len(rest)-1].event != "end" {
		t.Fatalf("resumed after %s: %d messages (first %+v), want %d then end", evs[from].id, len(rest), rest[0], len(evs)-from-1)
	}

	// The session stream: the turn, then turn_end, then it waits for more
	// (ended here by the invocation's context).
	_, sess, _, cancel := open(t, fn, "/v1/sessions/"+sid+"/events", caller, sseHdr)
	for m := next(t, sess); m.event != "turn_end"; m = next(t, sess) {
	}
	cancel()

	for _, c := range []struct {
		path, caller string
		hdr          http.Header
		status       int
		code         string
	}{
		{turn, "arn:aws:sts::000000000000:assumed-role/someone/else", sseHdr, 404, "not_found"},
		{"/v1/sessions/" + sid + "/events", "arn:aws:iam::000000000000:user/else", sseHdr, 404, "not_found"},
		{turn, "", sseHdr, 401, "unauthorized"},
		{turn, caller, nil, 406, "not_acceptable"},
		{"/v1/sessions/" + sid, caller, sseHdr, 404, "not_found"},
		{"/v1/sessions/" + sid + "/transcript", caller, nil, 404, "not_found"},
		{"/v1/sessions", caller, nil, 404, "not_found"},
	} {
		status, msgs, body, _ := open(t, fn, c.path, c.caller, c.hdr)
		if msgs != nil {
			t.Errorf("GET %s as %q: %d, an event stream; want %d %s", c.path, c.caller, status, c.status, c.code)
			continue
		}
		var e struct{ Error struct{ Code string } }
		if json.Unmarshal([]byte(body()), &e) != nil || status != c.status || e.Error.Code != c.code {
			t.Errorf("GET %s as %q: %d %s, want %d %s", c.path, c.caller, status, body(), c.status, c.code)
		}
	}
	for _, method := range []string{"POST", "DELETE"} {
		resp, err := fn(context.Background(), harness.URLEvent(method, "/v1/sessions/"+sid+"/submissions", nil, []byte(`{"prompt":"x"}`), caller))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 404 || !strings.Contains(string(raw), `"not_found"`) {
			t.Errorf("%s submissions: %d %s", method, resp.StatusCode, raw)
		}
	}
	if subs, _ := s.rt.Ports.Journal.ListSubmissions(context.Background(), sid, "", 0); len(subs) != 1 {
		t.Errorf("%d submissions after the stream function's requests, want 1 (it writes nothing)", len(subs))
	}
}
