package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/anthropic"
)

func Example() {
	// A stand-in for api.anthropic.com answering one short stream.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":9,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}

event: message_stop
data: {"type":"message_stop"}

`)
	}))
	defer srv.Close()

	c, err := anthropic.New(anthropic.Config{
		Key:     func(ctx context.Context) (string, error) { return "sk-ant-example", nil },
		BaseURL: srv.URL,
	})
	if err != nil {
		panic(err)
	}
	prompt := contracts.Node{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: "hi"}}}
	resp, err := c.Stream(context.Background(), contracts.ModelRequest{Model: "claude-sonnet-4-5", Messages: []contracts.Node{prompt}},
		func(ev contracts.ModelEvent) error {
			fmt.Printf("%s %q\n", ev.Type, ev.Text)
			return nil
		})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q %s %+v\n", resp.Text, resp.StopReason, resp.Usage)
	// Output:
	// text "Hello"
	// text " there."
	// usage ""
	// "Hello there." end_turn {InputTokens:9 OutputTokens:4}
}
