package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/openai"
)

// A local OpenAI-compatible server (here a stand-in for Ollama) needs a
// base URL and no key.
func ExampleClient_Stream() {
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: "+text("Hello")+"\n\n")
		fmt.Fprint(w, "data: "+text(", world.")+"\n\n")
		fmt.Fprint(w, "data: "+finish("stop")+"\n\n")
		fmt.Fprint(w, "data: "+usage(11, 4)+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer ollama.Close()

	c, err := openai.New(openai.Config{BaseURL: ollama.URL + "/v1"})
	if err != nil {
		panic(err)
	}
	req := contracts.ModelRequest{Model: "llama3.2", System: "Be brief.", Messages: []contracts.Node{
		{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: "Say hello."}}},
	}}
	resp, err := c.Stream(context.Background(), req, func(ev contracts.ModelEvent) error {
		if ev.Type == contracts.ModelText {
			fmt.Printf("delta %q\n", ev.Text)
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Text, resp.StopReason, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// delta "Hello"
	// delta ", world."
	// Hello, world. end_turn 11 4
}
