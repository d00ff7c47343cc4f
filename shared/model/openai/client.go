package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/retry"
)

// DefaultBaseURL is where requests go when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Config configures a Client.
type Config struct {
	// Key returns the API key, read for every model step (so a rotated
	// secret is picked up). It may be nil or return "" only when BaseURL is
	// set: Ollama and vLLM need no key, and then no Authorization header is
	// sent. The key is never logged and never appears in an error.
	Key func(ctx context.Context) (string, error)
	// BaseURL of an OpenAI-compatible server, e.g.
	// http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM),
	// http://localhost:4000 (LiteLLM). "" = DefaultBaseURL.
	BaseURL string
	// HTTPClient carries the requests; nil = a client with no overall
	// timeout (streams are long; retry.Policy.Timeout bounds each attempt).
	HTTPClient *http.Client
	// Retry bounds the attempts of one model step (retry.Run).
	Retry retry.Policy
	// MaxTokens is sent when the request carries none; 0 = omitted (the
	// server's default).
	MaxTokens int
}

// Client streams Chat Completions; it implements contracts.ModelClient and
// is safe for concurrent use.
type Client struct {
	cfg    Config
	chat   oai.ChatCompletionService
	openAI bool // the base URL is OpenAI's own API
}

var _ contracts.ModelClient = (*Client)(nil)

// New checks cfg and builds a client. It reads no environment variables:
// the SDK's OPENAI_* defaults are deliberately not applied.
func New(cfg Config) (*Client, error) {
	base := cfg.BaseURL
	if base == "" {
		if cfg.Key == nil {
			return nil, fmt.Errorf("openai client: a Key is required without a BaseURL: %w", contracts.ErrInvalid)
		}
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai client: base URL %q is not an http(s) URL: %w", base, contracts.ErrInvalid)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	c := &Client{cfg: cfg, openAI: u.Host == "api.openai.com"}
	// The service is built without oai.NewClient, which would apply the
	// OPENAI_* environment (key, base URL, headers) behind our back.
	c.chat = oai.NewChatCompletionService(
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0), // retry.Run is the one retry rule
	)
	return c, nil
}

// Stream runs one model step: it maps req to a streaming Chat Completions
// request and emits text deltas as they arrive, then every tool call, then
// the usage. Failures before any output are retried under c's retry.Policy;
// a stream that breaks after output started is returned as an error (the
// model phase makes a new attempt); a request that can never succeed wraps
// contracts.ErrInvalid.
func (c *Client) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	p, err := c.params(req)
	if err != nil {
		return contracts.ModelResponse{}, fmt.Errorf("building chat completion request for model %s: %w", req.Model, err)
	}
	key, err := c.key(ctx)
	if err != nil {
		return contracts.ModelResponse{}, err
	}
	return retry.Run(ctx, c.cfg.Retry, classify, emit, func(ctx context.Context, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
		return c.streamOnce(ctx, p, key, emit)
	})
}

func (c *Client) key(ctx context.Context) (string, error) {
	var key string
	if c.cfg.Key != nil {
		k, err := c.cfg.Key(ctx)
		if err != nil {
			return "", fmt.Errorf("reading the OpenAI API key: %w", err)
		}
		key = strings.TrimSpace(k) // a key read from a file often ends in a newline
	}
	if key == "" && c.cfg.BaseURL == "" {
		return "", fmt.Errorf("the OpenAI API key is empty: %w", contracts.ErrInvalid)
	}
	return key, nil
}
