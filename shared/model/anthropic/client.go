package anthropic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/retry"
)

// DefaultMaxTokens bounds a step's output when neither the request nor the
// Config says otherwise.
const DefaultMaxTokens = 8192

// Config configures a Client.
type Config struct {
	// Key resolves the API key for each model step (required). The key is
	// sent as x-api-key and never logged nor put in an error.
	Key func(ctx context.Context) (string, error)
	// BaseURL of the API; "" = the SDK default (https://api.anthropic.com/).
	BaseURL string
	// HTTPClient sends the requests; nil = a clone of http.DefaultTransport
	// with no overall timeout (streams are long; Retry.Timeout bounds an
	// attempt).
	HTTPClient *http.Client
	// Retry is the retry rule of one step (zero = retry's defaults).
	Retry retry.Policy
	// MaxTokens is used when a request's MaxTokens is 0; 0 = DefaultMaxTokens.
	MaxTokens int
}

// Client streams the Anthropic Messages API behind contracts.ModelClient.
// It is safe for concurrent use.
type Client struct {
	key       func(ctx context.Context) (string, error)
	messages  sdk.MessageService
	policy    retry.Policy
	maxTokens int
}

var _ contracts.ModelClient = (*Client)(nil)

// New checks cfg and builds a client. The SDK reads nothing from the
// environment (no ANTHROPIC_* variables) and makes no retries of its own:
// retry.Run is the only retry rule.
func New(cfg Config) (*Client, error) {
	if cfg.Key == nil {
		return nil, fmt.Errorf("anthropic client: Config.Key is required: %w", contracts.ErrInvalid)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic client: MaxTokens %d is negative: %w", cfg.MaxTokens, contracts.ErrInvalid)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("anthropic client: BaseURL %q is not an http(s) URL: %w", cfg.BaseURL, contracts.ErrInvalid)
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	c := &Client{
		key:       cfg.Key,
		messages:  sdk.NewClient(opts...).Messages,
		policy:    cfg.Retry,
		maxTokens: cmp.Or(cfg.MaxTokens, DefaultMaxTokens),
	}
	return c, nil
}

// defaultHTTPClient clones http.DefaultTransport, so that a test or a main
// replacing it does not change this client, and sets no Timeout: a stream
// lasts as long as the model writes.
func defaultHTTPClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		return &http.Client{Transport: t.Clone()}
	}
	return &http.Client{Transport: http.DefaultTransport}
}

// Stream sends one model step and streams its answer: a ModelText per text
// delta, a ModelToolCall per completed tool_use block, one ModelUsage at
// the end. Failures before any output are retried under the Config's
// policy; a failure after output is returned (the caller starts a new
// attempt). A request that can never succeed wraps contracts.ErrInvalid.
func (c *Client) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	params, err := newParams(req, c.maxTokens)
	if err != nil {
		return contracts.ModelResponse{}, fmt.Errorf("building anthropic request for model %q: %w", req.Model, err)
	}
	key, err := c.key(ctx)
	if err != nil {
		return contracts.ModelResponse{}, fmt.Errorf("resolving the anthropic API key: %w", err)
	}
	if key == "" {
		return contracts.ModelResponse{}, fmt.Errorf("resolving the anthropic API key: the key is empty: %w", contracts.ErrInvalid)
	}
	resp, err := retry.Run(ctx, c.policy, classify, emit, func(ctx context.Context, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
		return c.once(ctx, params, key, emit)
	})
	if err != nil {
		return resp, redacted{err: fmt.Errorf("anthropic model %s: %w", req.Model, err), key: key}
	}
	return resp, nil
}

// once makes one streaming request and reads it to message_stop.
func (c *Client) once(ctx context.Context, params sdk.MessageNewParams, key string, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	stream := c.messages.NewStreaming(ctx, params, option.WithAPIKey(key))
	defer stream.Close()
	var acc accumulator
	for stream.Next() {
		if err := acc.add(stream.Current(), emit); err != nil {
			return acc.resp, err
		}
	}
	if err := stream.Err(); err != nil {
		return acc.resp, err
	}
	return acc.finish(emit)
}

// classify says what retry.Run should do with one attempt's error.
func classify(err error) retry.Failure {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return retry.Failure{} // retry.Run owns deadlines and cancellation
	}
	var aerr *sdk.Error
	if !errors.As(err, &aerr) {
		// No API error: the connection failed, or the stream ended or broke
		// before any output.
		return retry.HTTP(0, nil)
	}
	var h http.Header
	if aerr.Response != nil {
		h = aerr.Response.Header
	}
	if aerr.StatusCode >= 400 || aerr.StatusCode == 0 {
		return retry.HTTP(aerr.StatusCode, h)
	}
	// An `error` event inside a 200 stream: its type decides.
	switch aerr.Type() {
	case sdk.ErrorTypeInvalidRequestError, sdk.ErrorTypeAuthenticationError, sdk.ErrorTypePermissionError,
		sdk.ErrorTypeNotFoundError, sdk.ErrorTypeBillingError:
		return retry.Failure{Permanent: true}
	default: // overloaded_error, api_error, rate_limit_error, timeout_error, unknown
		return retry.Failure{Retryable: true, RetryAfter: retry.RetryAfter(h, time.Now())}
	}
}

// redacted removes the API key from an error's text, whatever produced it;
// errors.Is and errors.As still see the wrapped error.
type redacted struct {
	err error
	key string
}

func (r redacted) Error() string {
	return strings.TrimSpace(strings.ReplaceAll(r.err.Error(), r.key, "[redacted]"))
}
func (r redacted) Unwrap() error { return r.err }
