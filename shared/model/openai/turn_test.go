package openai_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// These tests run the client through the real engine (enginetest.ModelTurn)
// against the fake server, and assert what a user sees: the transcript, the
// usage and the journal.

func TestTurnPlainText(t *testing.T) {
	f := newFake(t, script(answer(12, 7, "Hello", " from", " the fake", " model.")))
	sl := &sleeps{}
	res := enginetest.ModelTurn(t, client(t, f, sl), "gpt-test", "hi")

	if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 0 {
		t.Fatalf("phase %s (%s) after %d failures", res.Sub.Phase, res.Sub.Error, res.Failures)
	}
	want := []string{"user: text=hi", "assistant: text=Hello from the fake model."}
	if !reflect.DeepEqual(res.Transcript, want) {
		t.Fatalf("transcript %q, want %q", res.Transcript, want)
	}
	if res.Sub.Usage != (contracts.Usage{InputTokens: 12, OutputTokens: 7}) || res.Sub.Result != "Hello from the fake model." {
		t.Fatalf("usage %+v result %q", res.Sub.Usage, res.Sub.Result)
	}
	if got := deltas(res.Events); got != "Hello from the fake model." {
		t.Fatalf("text_delta events %q", got)
	}
	if last := res.Events[len(res.Events)-1]; last.Type != contracts.EventCommitted {
		t.Fatalf("last event %+v", last)
	}
	st, err := res.Harness.Store.GetStream(context.Background(), res.Sub.StreamKey)
	if err != nil || st.Done == nil || st.Done.StopReason != "end_turn" || st.Done.Usage != res.Sub.Usage {
		t.Fatalf("stored stream %+v, %v", st.Done, err)
	}
	if n := len(f.requests()); n != 1 || len(sl.waits()) != 0 {
		t.Fatalf("%d requests, waits %v", n, sl.waits())
	}
}

func TestTurnRetriesThrottlingAfterRetryAfter(t *testing.T) {
	f := newFake(t, script(
		status(429, `{"error":{"message":"Rate limit reached for gpt-test","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "retry-after", "2"),
		answer(5, 3, "Done", " waiting."),
	))
	sl := &sleeps{}
	res := enginetest.ModelTurn(t, client(t, f, sl), "gpt-test", "hi")

	if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 0 {
		t.Fatalf("phase %s (%s) after %d failures", res.Sub.Phase, res.Sub.Error, res.Failures)
	}
	if w := sl.waits(); len(w) != 1 || w[0] < 2*time.Second {
		t.Fatalf("waits %v, want one of at least 2s", w)
	}
	if n := len(f.requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if res.Transcript[1] != "assistant: text=Done waiting." || res.Sub.Usage.InputTokens != 5 {
		t.Fatalf("transcript %q usage %+v", res.Transcript, res.Sub.Usage)
	}
}

func TestTurnResumesACutStream(t *testing.T) {
	f := newFake(t, script(
		cut(role(), text("The answer"), text(" is fo")),
		answer(9, 6, "The answer", " is forty", "-two."),
	))
	sl := &sleeps{}
	res := enginetest.ModelTurn(t, client(t, f, sl), "gpt-test", "what is the answer?")

	if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 1 {
		t.Fatalf("phase %s (%s) after %d failures, want committed after 1", res.Sub.Phase, res.Sub.Error, res.Failures)
	}
	want := []string{"user: text=what is the answer?", "assistant: text=The answer is forty-two."}
	if !reflect.DeepEqual(res.Transcript, want) {
		t.Fatalf("transcript %q, want %q", res.Transcript, want)
	}
	if res.Sub.Usage != (contracts.Usage{InputTokens: 9, OutputTokens: 6}) || res.Sub.Result != "The answer is forty-two." {
		t.Fatalf("usage %+v result %q", res.Sub.Usage, res.Sub.Result)
	}
	if n := len(f.requests()); n != 2 || len(sl.waits()) != 0 {
		t.Fatalf("%d requests, waits %v: a broken stream is not retried inside the client", n, sl.waits())
	}
}

func TestTurnErrors(t *testing.T) {
	const (
		rateLimited = `{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":"rate_limit_exceeded"}}`
		serverError = `{"error":{"message":"The server had an error processing your request.","type":"server_error","param":null,"code":null}}`
	)
	ok := answer(4, 2, "Recovered", ".")
	cases := []struct {
		name     string
		replies  []reply
		phase    contracts.Phase
		reason   string // prefix of Sub.Error when FAILED
		contains string // also in Sub.Error
		requests int
		waits    int
		failures int
	}{
		{name: "500 before output is retried",
			replies: []reply{status(500, serverError), ok}, phase: contracts.PhaseCommitted, requests: 2, waits: 1},
		{name: "400 fails without retry",
			replies: []reply{status(400, `{"error":{"message":"Invalid 'messages[1].content': string too long.","type":"invalid_request_error","param":"messages[1].content","code":"string_above_max_length"}}`)},
			phase:   contracts.PhaseFailed, reason: "model_error:", requests: 1,
			contains: "HTTP 400 Bad Request (invalid_request_error, string_above_max_length): Invalid 'messages[1].content'"},
		{name: "401 fails and hides the key",
			replies: []reply{status(401, `{"error":{"message":"Incorrect API key provided: `+testKey+`.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)},
			phase:   contracts.PhaseFailed, reason: "model_error:", contains: "Incorrect API key provided: [redacted].", requests: 1},
		{name: "vLLM-style 404 body without an error object",
			replies: []reply{status(404, `{"object":"error","message":"The model gpt-test does not exist.","type":"NotFoundError","param":null,"code":404}`)},
			phase:   contracts.PhaseFailed, reason: "model_error:", contains: "HTTP 404 Not Found: NotFoundError: The model gpt-test does not exist.", requests: 1},
		{name: "rate-limit error object in the stream before output is retried",
			replies: []reply{sse(rateLimited), ok}, phase: contracts.PhaseCommitted, requests: 2, waits: 1},
		{name: "server error object in the stream before output is retried",
			replies: []reply{sse(role(), serverError), ok}, phase: contracts.PhaseCommitted, requests: 2, waits: 1},
		{name: "invalid-request error object in the stream fails",
			replies: []reply{sse(role(), `{"error":{"message":"Invalid prompt: flagged","type":"invalid_request_error","code":"invalid_prompt"}}`)},
			phase:   contracts.PhaseFailed, reason: "model_error:", contains: "chat completion stream sent an error (invalid_request_error, invalid_prompt): Invalid prompt: flagged", requests: 1},
		{name: "error object after output breaks the stream",
			replies: []reply{sse(role(), text("Recov"), serverError), ok}, phase: contracts.PhaseCommitted, requests: 2, failures: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, script(tc.replies...))
			sl := &sleeps{}
			res := enginetest.ModelTurn(t, client(t, f, sl), "gpt-test", "hi")
			if res.Sub.Phase != tc.phase || res.Failures != tc.failures {
				t.Fatalf("phase %s (%q) after %d failures, want %s after %d", res.Sub.Phase, res.Sub.Error, res.Failures, tc.phase, tc.failures)
			}
			if n, w := len(f.requests()), len(sl.waits()); n != tc.requests || w != tc.waits {
				t.Fatalf("%d requests and %d waits, want %d and %d", n, w, tc.requests, tc.waits)
			}
			if !strings.HasPrefix(res.Sub.Error, tc.reason) || !strings.Contains(res.Sub.Error, tc.contains) {
				t.Fatalf("error %q, want prefix %q containing %q", res.Sub.Error, tc.reason, tc.contains)
			}
			if tc.phase == contracts.PhaseCommitted && res.Transcript[1] != "assistant: text=Recovered." {
				t.Fatalf("transcript %q", res.Transcript)
			}
			journal, err := json.Marshal([]any{res.Sub, res.Events, res.Transcript})
			if err != nil || strings.Contains(string(journal), testKey) {
				t.Fatalf("the API key leaked into the journal: %s", journal)
			}
		})
	}
}

// deltas joins the text of the text_delta events.
func deltas(evs []contracts.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == contracts.EventTextDelta {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}
