package bedrock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/auth/bearer"

	"github.com/cairnrun/cairn/shared/model/bedrock"
	"github.com/cairnrun/cairn/shared/model/retry"
)

// model is the model id every test turn uses.
const model = "anthropic.claude-test-v1:0"

// fakeBedrock speaks Bedrock's ConverseStream wire format: a JSON request,
// an application/vnd.amazon.eventstream response of binary frames, or an
// HTTP error response. answer decides each response from the request.
type fakeBedrock struct {
	t      *testing.T
	srv    *httptest.Server
	answer func(n int, req wireRequest) responder

	mu   sync.Mutex
	reqs []seen
}

// seen is one request as the server received it.
type seen struct {
	Path, Auth string
	Header     http.Header
	Body       wireRequest
}

// responder writes one response.
type responder func(w http.ResponseWriter)

func newFake(t *testing.T, answer func(n int, req wireRequest) responder) *fakeBedrock {
	f := &fakeBedrock{t: t, answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBedrock) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	var body wireRequest
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		f.t.Errorf("reading request body %q: %v", raw, err)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, seen{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Header: r.Header.Clone(), Body: body})
	n := len(f.reqs)
	f.mu.Unlock()
	f.answer(n, body)(w)
}

// requests returns what the server received so far.
func (f *fakeBedrock) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

// waits records the retry waits instead of sleeping them.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(_ context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return nil
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// client is a Client on a real bedrockruntime client pointed at the fake:
// static IAM credentials, region us-east-1, and a bearer token configured
// too, to show it is never used.
func (f *fakeBedrock) client(t *testing.T, w *waits, maxTokens int) *bedrock.Client {
	t.Helper()
	c, err := bedrock.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(f.srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		BearerAuthTokenProvider: bearer.TokenProviderFunc(func(context.Context) (bearer.Token, error) {
			return bearer.Token{Value: "bedrock-api-key"}, nil
		}),
	}, bedrock.Config{Retry: retry.Policy{Attempts: 3, Sleep: w.sleep}, MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wireRequest is the ConverseStream request body.
type wireRequest struct {
	Messages []struct {
		Role    string      `json:"role"`
		Content []wireBlock `json:"content"`
	} `json:"messages"`
	System []struct {
		Text string `json:"text"`
	} `json:"system"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
			} `json:"toolSpec"`
		} `json:"tools"`
	} `json:"toolConfig"`
	InferenceConfig *struct {
		MaxTokens int `json:"maxTokens"`
	} `json:"inferenceConfig"`
}

type wireBlock struct {
	Text    *string `json:"text"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ToolResult *struct {
		ToolUseID string `json:"toolUseId"`
		Content   []struct {
			Text string `json:"text"`
		} `json:"content"`
		Status string `json:"status"`
	} `json:"toolResult"`
}

// toolResults returns the toolResult blocks of the request's last message.
func (r wireRequest) toolResults() []wireBlock {
	var out []wireBlock
	if len(r.Messages) == 0 {
		return nil
	}
	for _, b := range r.Messages[len(r.Messages)-1].Content {
		if b.ToolResult != nil {
			out = append(out, b)
		}
	}
	return out
}

// frame is one event-stream message.
type frame = eventstream.Message

// event is an event frame; the payload carries the "p" padding field real
// Bedrock adds to every event.
func event(typ string, payload map[string]any) frame {
	payload["p"] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"
	b, _ := json.Marshal(payload)
	var h eventstream.Headers
	h.Set(":event-type", eventstream.StringValue(typ))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	h.Set(":message-type", eventstream.StringValue("event"))
	return frame{Headers: h, Payload: b}
}

// exception is an exception frame (typ as Bedrock names it on the wire,
// e.g. "throttlingException").
func exception(typ, message string) frame {
	b, _ := json.Marshal(map[string]string{"message": message})
	var h eventstream.Headers
	h.Set(":exception-type", eventstream.StringValue(typ))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	h.Set(":message-type", eventstream.StringValue("exception"))
	return frame{Headers: h, Payload: b}
}

func messageStart() frame { return event("messageStart", map[string]any{"role": "assistant"}) }

func textDelta(idx int, s string) frame {
	return event("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"text": s}})
}

func toolStart(idx int, id, name string) frame {
	return event("contentBlockStart", map[string]any{"contentBlockIndex": idx,
		"start": map[string]any{"toolUse": map[string]any{"toolUseId": id, "name": name}}})
}

func toolDelta(idx int, fragment string) frame {
	return event("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"toolUse": map[string]any{"input": fragment}}})
}

func blockStop(idx int) frame {
	return event("contentBlockStop", map[string]any{"contentBlockIndex": idx})
}

// end is messageStop and metadata.
func end(stop string, in, out int) []frame {
	return []frame{
		event("messageStop", map[string]any{"stopReason": stop}),
		event("metadata", map[string]any{
			"usage":   map[string]any{"inputTokens": in, "outputTokens": out, "totalTokens": in + out},
			"metrics": map[string]any{"latencyMs": 321},
		}),
	}
}

// textAnswer is a whole streamed text answer, one delta per chunk.
func textAnswer(in, out int, chunks ...string) []frame {
	fs := []frame{messageStart()}
	for _, c := range chunks {
		fs = append(fs, textDelta(0, c))
	}
	fs = append(fs, blockStop(0))
	return append(fs, end("end_turn", in, out)...)
}

// stream answers 200 with the frames, flushing after each.
func stream(frames ...frame) responder {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.Header().Set("X-Amzn-Requestid", "req-stream")
		w.WriteHeader(http.StatusOK)
		writeFrames(w, frames)
	}
}

// cut writes the frames, then closes the connection mid-response.
func cut(frames ...frame) responder {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.WriteHeader(http.StatusOK)
		writeFrames(w, frames)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		conn.Close()
	}
}

func writeFrames(w http.ResponseWriter, frames []frame) {
	enc := eventstream.NewEncoder()
	for _, f := range frames {
		var buf bytes.Buffer
		if err := enc.Encode(&buf, f); err != nil {
			panic(err)
		}
		w.Write(buf.Bytes())
		w.(http.Flusher).Flush()
	}
}

// httpError answers like Bedrock's REST-JSON errors: the code in
// x-amzn-ErrorType (with the service namespace suffix), the message in the
// body.
func httpError(status int, code, message string, header ...string) responder {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", code+":http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.Header().Set("X-Amzn-Requestid", "req-error")
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]string{"message": message})
		w.Write(b)
	}
}

// script answers the n-th request with the n-th responder (the last one
// repeats).
func script(rs ...responder) func(int, wireRequest) responder {
	return func(n int, _ wireRequest) responder { return rs[min(n, len(rs))-1] }
}
