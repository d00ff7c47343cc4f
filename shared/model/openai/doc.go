// Package openai is the contracts.ModelClient for the OpenAI Chat
// Completions API, streamed (docs/DESIGN.md §9). A configurable base URL
// makes it speak to any OpenAI-compatible server as well: LiteLLM, vLLM,
// Ollama.
//
// It owns the mapping between cairn's transcript and Chat Completions
// messages, the assembly of the stream into events, and the classification
// of failures for the one retry rule (package retry).
//
// It may import shared/contracts, shared/model/retry, the standard library
// and the official SDK (github.com/openai/openai-go/v3).
//
// Mapping. ModelRequest.System becomes a system message; the transcript
// path becomes user messages, assistant messages (text plus tool_calls of
// type function, arguments as JSON text) and one `tool` message per
// tool_result, keyed by tool_call_id (an error result's content starts with
// ToolErrorPrefix); each ToolSpec becomes a function tool whose parameters
// are its JSON Schema. Requests always stream with
// stream_options.include_usage. MaxTokens is sent as max_completion_tokens
// to api.openai.com (its reasoning models refuse max_tokens) and as
// max_tokens to every other server.
//
// Stream. Text deltas (and refusals) are emitted as they arrive; tool calls
// are assembled from their deltas by index and emitted once the stream
// finished, arguments "" becoming {}; the usage of the final chunk
// (prompt_tokens, completion_tokens) is emitted last. A server that sends no
// usage yields zero usage. finish_reason maps to end_turn, tool_use or
// max_tokens; others are kept. A stream that ends without a finish_reason
// is broken.
//
// Errors. An error status is classified by retry.HTTP (429, 408, 409 and
// 5xx retryable, honouring Retry-After and retry-after-ms; other 4xx
// permanent: the turn ends FAILED "model_error: …"); a connection that fails
// before a response is retryable; an error object inside the stream is
// retryable when its type or code names throttling or a server fault, else
// permanent. Once output has streamed, any failure is returned as is and
// the model phase makes a new attempt. The SDK's own retries are off, and
// the SDK's OPENAI_* environment defaults are not applied: configuration
// comes only from Config. The key is never logged and is redacted from
// every error message.
//
// # Usage
//
//	c, err := openai.New(openai.Config{
//		Key: func(ctx context.Context) (string, error) { return resolver.Resolve(ctx, "secretsmanager:cairn/openai") },
//	})
//	// Ollama, vLLM: a base URL and no key.
//	local, err := openai.New(openai.Config{BaseURL: "http://localhost:11434/v1"})
//	resp, err := c.Stream(ctx, contracts.ModelRequest{Model: "gpt-4.1", Messages: path, Tools: specs}, emit)
package openai
