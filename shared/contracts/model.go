package contracts

import "context"

// ModelEventType classifies one streamed model event.
type ModelEventType string

const (
	ModelText     ModelEventType = "text"
	ModelToolCall ModelEventType = "tool_call"
	ModelUsage    ModelEventType = "usage"
)

// ModelEvent is one chunk of a model stream, as stored in the StreamStore.
type ModelEvent struct {
	Type     ModelEventType `json:"type"`
	Text     string         `json:"text,omitempty"`
	ToolCall *ToolCall      `json:"tool_call,omitempty"`
	Usage    *Usage         `json:"usage,omitempty"`
}

// ModelResponse is a completed model step (the stream's completion marker).
type ModelResponse struct {
	Text       string     `json:"text"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	StopReason string     `json:"stop_reason,omitempty"`
	Usage      Usage      `json:"usage"`
}

// ModelRequest is one model step's input: the transcript path root → leaf.
type ModelRequest struct {
	Model     string     `json:"model"`
	System    string     `json:"system,omitempty"`
	Messages  []Node     `json:"messages"`
	Tools     []ToolSpec `json:"tools,omitempty"`
	MaxTokens int        `json:"max_tokens,omitempty"`
	// StreamKey identifies this attempt (providers may use it as a request
	// id); a broken stream is retried under a new key.
	StreamKey string `json:"stream_key"`
}

// ModelClient streams one model step. emit is called for every event in
// order; an emit error aborts the stream. The returned response is the
// assembled whole. Implementations must not retry once output started.
type ModelClient interface {
	Stream(ctx context.Context, req ModelRequest, emit func(ModelEvent) error) (ModelResponse, error)
}

// ModelChecker is implemented by model clients that can say, without
// calling the model, whether they serve a model name (the part after
// "provider:") and whether what they need is configured (an API key's
// variable or secret reference). The engine asks it when a session is
// created; the error wraps ErrInvalid and names what is missing (e.g. the
// variable to set). It must not spend money: no model call, at most a
// cached credential lookup. A client without it accepts every name.
type ModelChecker interface {
	CheckModel(name string) error
}
