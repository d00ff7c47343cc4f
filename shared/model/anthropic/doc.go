// Package anthropic is the Anthropic Messages API (streaming) behind
// contracts.ModelClient (docs/DESIGN.md §9), built on the official Go SDK.
//
// It owns the mapping both ways: the transcript path → messages (user and
// tool nodes become user messages, tool results as tool_result blocks with
// is_error), tool specs → tool definitions with their JSON Schema as
// input_schema; and the SSE stream → ModelEvents: a ModelText per
// text_delta, one ModelToolCall per tool_use block once its input_json_delta
// fragments are complete (content_block_stop), one ModelUsage at the end
// (input tokens from message_start, cache reads and writes included; output
// tokens from message_delta), the stop reason from message_delta. A stream
// that ends before message_stop is an error.
//
// Retries follow package retry and nothing else (the SDK's own retries are
// off): HTTP errors are classified by status and Retry-After, an `error`
// event inside a stream by its type (overloaded, api, rate-limit and timeout
// errors retry; invalid request, authentication, permission, not-found and
// billing errors are permanent), connection failures retry, and nothing
// retries once output has streamed. The SDK reads no ANTHROPIC_* variables:
// the key comes from Config.Key for every step and never appears in an
// error.
//
// It may import shared/contracts, shared/model/retry, the standard library
// and the Anthropic SDK.
//
// # Usage
//
//	c, err := anthropic.New(anthropic.Config{
//		Key: func(ctx context.Context) (string, error) { return resolver.Resolve(ctx, "secretsmanager:cairn/anthropic") },
//	})
//	ports.Models["anthropic"] = c // sessions then use "anthropic:claude-sonnet-4-5"
//	resp, err := c.Stream(ctx, contracts.ModelRequest{Model: "claude-sonnet-4-5", Messages: path, Tools: specs}, emit)
package anthropic
