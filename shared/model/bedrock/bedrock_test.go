package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go/auth/bearer"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/bedrock"
	"github.com/cairnrun/cairn/shared/model/retry"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

func TestPlainTextIsSignedAndCommits(t *testing.T) {
	f := newFake(t, script(stream(textAnswer(21, 7, "Hello", " from", " Bedrock", ".")...)))
	w := &waits{}
	res := enginetest.ModelTurn(t, f.client(t, w, 0), model, "hi")

	if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 0 {
		t.Fatalf("phase %s (%s) after %d failures", res.Sub.Phase, res.Sub.Error, res.Failures)
	}
	want := []string{"user: text=hi", "assistant: text=Hello from Bedrock."}
	if !slices.Equal(res.Transcript, want) {
		t.Fatalf("transcript %q, want %q", res.Transcript, want)
	}
	if res.Sub.Usage != (contracts.Usage{InputTokens: 21, OutputTokens: 7}) || res.Sub.Result != "Hello from Bedrock." {
		t.Fatalf("journal usage %+v result %q", res.Sub.Usage, res.Sub.Result)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/model/"+model+"/converse-stream" {
		t.Errorf("path %q", r.Path)
	}
	if !strings.HasPrefix(r.Auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(r.Auth, "/us-east-1/bedrock/aws4_request") {
		t.Errorf("Authorization %q: want SigV4 with the IAM credentials, never the configured bearer key", r.Auth)
	}
	for name, vs := range r.Header {
		if strings.Contains(strings.Join(vs, " "), "bedrock-api-key") || strings.EqualFold(name, "x-api-key") {
			t.Errorf("header %s: %q carries an API key", name, vs)
		}
	}
	if r.Body.InferenceConfig == nil || r.Body.InferenceConfig.MaxTokens != 8192 {
		t.Errorf("inferenceConfig %+v, want maxTokens 8192 by default", r.Body.InferenceConfig)
	}
	if len(w.all()) != 0 {
		t.Errorf("waits %v, want none", w.all())
	}
}

// toolServer asks for write_file then read_file in one message, the inputs
// split mid-token, and answers with text once it sees their results.
func toolServer(t *testing.T) *fakeBedrock {
	return newFake(t, func(_ int, req wireRequest) responder {
		if rs := req.toolResults(); len(rs) > 0 {
			return stream(textAnswer(150, 9, "The file says: ", *rsText(rs[1]))...)
		}
		fs := []frame{messageStart(), textDelta(0, "Writing, then reading."), blockStop(0),
			toolStart(1, "tooluse_w1", "write_file")}
		for _, frag := range []string{`{"pa`, `th":"no`, `tes.txt","con`, `tent":"hel`, `lo bed`, `rock"}`} {
			fs = append(fs, toolDelta(1, frag))
		}
		fs = append(fs, blockStop(1), toolStart(2, "tooluse_r2", "read_file"), toolDelta(2, `{"path"`), toolDelta(2, `:"notes.t`), toolDelta(2, `xt"}`), blockStop(2))
		return stream(append(fs, end("tool_use", 100, 40)...)...)
	})
}

func rsText(b wireBlock) *string {
	s := ""
	for _, c := range b.ToolResult.Content {
		s += c.Text
	}
	return &s
}

func TestToolCallsRunAndResultsGoBack(t *testing.T) {
	f := toolServer(t)
	h := enginetest.New(t, func(p *assemble.Ports) { p.Models["bedrock"] = f.client(t, &waits{}, 2048) })
	s := h.Session(contracts.SessionSpec{Model: "bedrock:" + model, System: "You are terse."})
	sub := h.Submit(s.ID, "save a note")
	h.Drain()

	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseCommitted {
		t.Fatalf("phase %s (%s)", got.Phase, got.Error)
	}
	if got.Usage != (contracts.Usage{InputTokens: 250, OutputTokens: 49}) {
		t.Fatalf("journal usage %+v, want both steps' metadata summed", got.Usage)
	}
	if h.File(s.ID, "notes.txt") != "hello bedrock" {
		t.Fatalf("notes.txt = %q", h.File(s.ID, "notes.txt"))
	}
	tr := h.Transcript(s.ID)
	wantAssistant := `assistant: text=Writing, then reading. use=write_file{"path":"notes.txt","content":"hello bedrock"} use=read_file{"path":"notes.txt"}`
	if len(tr) != 4 || tr[1] != wantAssistant || !strings.HasPrefix(tr[2], "tool: result=") || !strings.HasSuffix(tr[2], "result=hello bedrock") ||
		tr[3] != "assistant: text=The file says: hello bedrock" {
		t.Fatalf("transcript %q", tr)
	}

	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		b := r.Body
		if len(b.System) != 1 || b.System[0].Text != "You are terse." {
			t.Errorf("request %d system %+v", i, b.System)
		}
		if b.InferenceConfig == nil || b.InferenceConfig.MaxTokens != 2048 {
			t.Errorf("request %d inferenceConfig %+v", i, b.InferenceConfig)
		}
		var names []string
		if b.ToolConfig != nil {
			for _, tl := range b.ToolConfig.Tools {
				names = append(names, tl.ToolSpec.Name)
				if tl.ToolSpec.Name == "write_file" && (!strings.Contains(string(tl.ToolSpec.InputSchema.JSON), `"content"`) || tl.ToolSpec.Description == "") {
					t.Errorf("write_file spec %+v", tl.ToolSpec)
				}
			}
		}
		if !slices.Contains(names, "write_file") || !slices.Contains(names, "read_file") {
			t.Errorf("request %d tools %v", i, names)
		}
	}
	second := reqs[1].Body
	roles := []string{}
	for _, m := range second.Messages {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"user", "assistant", "user"}) {
		t.Fatalf("second request roles %v", roles)
	}
	uses := second.Messages[1].Content
	if len(uses) != 3 || uses[1].ToolUse == nil || uses[1].ToolUse.ToolUseID != "tooluse_w1" || !sameJSON(uses[1].ToolUse.Input, `{"content":"hello bedrock","path":"notes.txt"}`) {
		t.Fatalf("assistant message sent back %+v", uses)
	}
	rs := second.toolResults()
	if len(rs) != 2 || rs[0].ToolResult.ToolUseID != "tooluse_w1" || rs[1].ToolResult.ToolUseID != "tooluse_r2" ||
		rs[0].ToolResult.Status != "" || *rsText(rs[1]) != "hello bedrock" {
		t.Fatalf("tool results sent %+v", rs)
	}
}

func TestRetryableErrorsWaitAndRetry(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   responder
		minWait time.Duration
	}{
		{"429 throttling with Retry-After", httpError(http.StatusTooManyRequests, "ThrottlingException", "Too many requests, please wait before trying again.", "Retry-After", "2"), 2 * time.Second},
		{"503 service unavailable", httpError(http.StatusServiceUnavailable, "ServiceUnavailableException", "Bedrock is unable to process your request."), 0},
		{"500 internal server error", httpError(http.StatusInternalServerError, "InternalServerException", "internal error"), 0},
		{"429 model not ready", httpError(http.StatusTooManyRequests, "ModelNotReadyException", "Model is not ready"), 0},
		{"throttlingException event before output", stream(messageStart(), exception("throttlingException", "Too many tokens, please wait before trying again.")), 0},
		{"internalServerException event before output", stream(messageStart(), exception("internalServerException", "boom")), 0},
		{"modelStreamErrorException event before output", stream(messageStart(), exception("modelStreamErrorException", "model stream broke")), 0},
		{"stream cut before output", cut(messageStart()), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, script(tc.first, stream(textAnswer(5, 2, "Fine", ".")...)))
			w := &waits{}
			res := enginetest.ModelTurn(t, f.client(t, w, 0), model, "hi")
			if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 0 {
				t.Fatalf("phase %s (%s) after %d failures", res.Sub.Phase, res.Sub.Error, res.Failures)
			}
			if n := len(f.requests()); n != 2 {
				t.Fatalf("%d requests, want 2", n)
			}
			ws := w.all()
			if len(ws) != 1 || ws[0] < tc.minWait {
				t.Fatalf("waits %v, want one of at least %s", ws, tc.minWait)
			}
			if !slices.Equal(res.Transcript, []string{"user: text=hi", "assistant: text=Fine."}) || res.Sub.Usage != (contracts.Usage{InputTokens: 5, OutputTokens: 2}) {
				t.Fatalf("transcript %q usage %+v", res.Transcript, res.Sub.Usage)
			}
		})
	}
}

func TestBrokenStreamResumesWithANewAttempt(t *testing.T) {
	half := []frame{messageStart(), textDelta(0, "The answer is "), textDelta(0, "forty")}
	for _, tc := range []struct {
		name  string
		first responder
	}{
		{"connection closed mid-answer", cut(half...)},
		{"exception event mid-answer", stream(append(half, exception("modelStreamErrorException", "stream error"))...)},
		{"stream ends without messageStop", stream(half...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, script(tc.first, stream(textAnswer(30, 6, "The answer is ", "forty-two.")...)))
			w := &waits{}
			res := enginetest.ModelTurn(t, f.client(t, w, 0), model, "question")
			if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 1 {
				t.Fatalf("phase %s (%s) after %d failures, want committed after 1", res.Sub.Phase, res.Sub.Error, res.Failures)
			}
			if want := []string{"user: text=question", "assistant: text=The answer is forty-two."}; !slices.Equal(res.Transcript, want) {
				t.Fatalf("transcript %q, want %q", res.Transcript, want)
			}
			if res.Sub.Usage != (contracts.Usage{InputTokens: 30, OutputTokens: 6}) || res.Sub.Result != "The answer is forty-two." {
				t.Fatalf("journal usage %+v result %q", res.Sub.Usage, res.Sub.Result)
			}
			if n, ws := len(f.requests()), w.all(); n != 2 || len(ws) != 0 {
				t.Fatalf("%d requests and waits %v: a broken stream is not retried inside the attempt", n, ws)
			}
		})
	}
}

func TestPermanentErrorsFailTheTurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp responder
		want []string // in the failure reason
	}{
		{"400 validation", httpError(http.StatusBadRequest, "ValidationException", "messages.0: blank text"), []string{"ValidationException", "messages.0: blank text"}},
		{"403 access denied", httpError(http.StatusForbidden, "AccessDeniedException", "You don't have access to the model with the specified model ID."), []string{"Bedrock console", "Model access", "AccessDeniedException"}},
		{"404 unknown model", httpError(http.StatusNotFound, "ResourceNotFoundException", "Could not resolve the foundation model."), []string{"inference profile", "ResourceNotFoundException"}},
		{"403 bad credentials", httpError(http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid."), []string{"IAM role or credentials"}},
		{"validationException event", stream(messageStart(), exception("validationException", "input is too long")), []string{"input is too long"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, script(tc.resp))
			w := &waits{}
			res := enginetest.ModelTurn(t, f.client(t, w, 0), model, "hi")
			if res.Sub.Phase != contracts.PhaseFailed || !strings.HasPrefix(res.Sub.Error, "model_error:") {
				t.Fatalf("phase %s error %q, want FAILED model_error:…", res.Sub.Phase, res.Sub.Error)
			}
			for _, s := range append(tc.want, model) {
				if !strings.Contains(res.Sub.Error, s) {
					t.Errorf("reason %q does not mention %q", res.Sub.Error, s)
				}
			}
			if n, ws := len(f.requests()), w.all(); n != 1 || len(ws) != 0 || res.Failures != 0 {
				t.Fatalf("%d requests, waits %v, %d failures: a permanent error is not retried", n, ws, res.Failures)
			}
			if len(res.Transcript) != 0 {
				t.Fatalf("transcript %q: a failed turn leaves the session head where it was", res.Transcript)
			}
		})
	}
}

func TestStreamEmitsInOrder(t *testing.T) {
	f := newFake(t, script(stream(append([]frame{messageStart(), textDelta(0, "a"), textDelta(0, "b"), blockStop(0),
		toolStart(1, "t1", "glob"), blockStop(1), // no input at all → {}
		toolStart(2, "t2", "grep"), toolDelta(2, `{"pattern":`), toolDelta(2, ` "x", "n": 12345678901234567890}`), blockStop(2)},
		end("tool_use", 3, 4)...)...)))
	c := f.client(t, &waits{}, 0)
	var got []string
	resp, err := c.Stream(context.Background(), contracts.ModelRequest{Model: model, Messages: []contracts.Node{userText("go")}}, func(ev contracts.ModelEvent) error {
		switch ev.Type {
		case contracts.ModelText:
			got = append(got, "text:"+ev.Text)
		case contracts.ModelToolCall:
			got = append(got, "call:"+ev.ToolCall.ID+string(ev.ToolCall.Input))
		case contracts.ModelUsage:
			got = append(got, "usage")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"text:a", "text:b", "call:t1{}", `call:t2{"pattern":"x","n":12345678901234567890}`, "usage"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if resp.Text != "ab" || len(resp.ToolCalls) != 2 || resp.StopReason != "tool_use" || resp.Usage != (contracts.Usage{InputTokens: 3, OutputTokens: 4}) {
		t.Fatalf("response %+v", resp)
	}
}

func TestEmitErrorAbortsTheStream(t *testing.T) {
	f := newFake(t, script(stream(textAnswer(1, 1, "a", "b")...)))
	stop := errors.New("store full")
	n := 0
	_, err := f.client(t, &waits{}, 0).Stream(context.Background(), contracts.ModelRequest{Model: model, Messages: []contracts.Node{userText("go")}},
		func(contracts.ModelEvent) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 || len(f.requests()) != 1 {
		t.Fatalf("err %v after %d events and %d requests", err, n, len(f.requests()))
	}
}

func TestConnectionRefusedIsRetried(t *testing.T) {
	f := newFake(t, script(stream(textAnswer(1, 1, "x")...)))
	f.srv.Close() // nothing listens any more
	w := &waits{}
	c := f.client(t, w, 0)
	_, err := c.Stream(context.Background(), contracts.ModelRequest{Model: model, Messages: []contracts.Node{userText("go")}}, func(contracts.ModelEvent) error { return nil })
	if err == nil || errors.Is(err, contracts.ErrInvalid) || len(w.all()) != 2 {
		t.Fatalf("err %v, waits %v: a refused connection is retryable (3 attempts)", err, w.all())
	}
}

func TestNoCredentialsNeverFallsBackToAKey(t *testing.T) {
	f := newFake(t, script(stream(textAnswer(1, 1, "x")...)))
	api := bedrockruntime.New(bedrockruntime.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(f.srv.URL),
		BearerAuthTokenProvider: bearer.TokenProviderFunc(func(context.Context) (bearer.Token, error) {
			return bearer.Token{Value: "bedrock-api-key"}, nil
		}),
	})
	w := &waits{}
	c, err := bedrock.New(bedrock.Config{Client: api, Retry: retry.Policy{Sleep: w.sleep}})
	if err != nil {
		t.Fatal(err)
	}
	res := enginetest.ModelTurn(t, c, model, "hi")
	if res.Sub.Phase != contracts.PhaseFailed || !strings.Contains(res.Sub.Error, "IAM credentials only") {
		t.Fatalf("phase %s error %q", res.Sub.Phase, res.Sub.Error)
	}
	if n := len(f.requests()); n != 0 || len(w.all()) != 0 {
		t.Fatalf("%d requests, waits %v: nothing is sent without IAM credentials", n, w.all())
	}
	if _, err := bedrock.NewFromConfig(aws.Config{Region: "us-east-1"}, bedrock.Config{}); !errors.Is(err, contracts.ErrInvalid) {
		t.Fatalf("NewFromConfig without credentials: %v", err)
	}
}

func sameJSON(got []byte, want string) bool {
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && reflect.DeepEqual(a, b)
}

func userText(s string) contracts.Node {
	return contracts.Node{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: s}}}
}

// TestRequestBodyOnlyReads: the HTTP client gets a request body without
// WriteTo. Through WriteTo, the SDK's body, closed once the response
// headers are in, answers io.EOF, which net/http — when its last read of
// the body comes after that close, as on a loaded machine — takes for a
// write error: it closes the connection and cuts the stream (a healthy one
// broke with "use of closed network connection"; a broken one broke before
// its first event and was retried as if nothing had been streamed).
func TestRequestBodyOnlyReads(t *testing.T) {
	f := newFake(t, script(stream(textAnswer(3, 1, "ok")...)))
	var bodies []string
	hc := doer(func(r *http.Request) (*http.Response, error) {
		_, writerTo := r.Body.(io.WriterTo)
		bodies = append(bodies, fmt.Sprintf("%T writerTo=%t", r.Body, writerTo))
		return f.srv.Client().Do(r)
	})
	c, err := bedrock.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(f.srv.URL), HTTPClient: hc,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")}, bedrock.Config{Retry: retry.Policy{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Stream(context.Background(), contracts.ModelRequest{Model: model, Messages: []contracts.Node{userText("go")}}, func(contracts.ModelEvent) error { return nil })
	if err != nil || resp.Text != "ok" {
		t.Fatalf("%+v, %v", resp, err)
	}
	if len(bodies) != 1 || strings.HasSuffix(bodies[0], "writerTo=true") {
		t.Fatalf("request bodies %v, want one without WriteTo", bodies)
	}
}

type doer func(*http.Request) (*http.Response, error)

func (d doer) Do(r *http.Request) (*http.Response, error) { return d(r) }
