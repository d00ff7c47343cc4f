package bedrock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go/auth/bearer"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/retry"
)

// DefaultMaxTokens caps a step's output when neither the request nor the
// Config says otherwise.
const DefaultMaxTokens = 8192

// ConverseStreamAPI is the one call Stream makes (tests and the runtime pass
// *bedrockruntime.Client). Every call carries iamOnly: whatever client is
// passed, its own retryer is off (retry.Run is the one rule) and the request
// is SigV4 signed.
type ConverseStreamAPI interface {
	ConverseStream(ctx context.Context, in *bedrockruntime.ConverseStreamInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseStreamOutput, error)
}

// Config of a Client.
type Config struct {
	Client    ConverseStreamAPI
	Retry     retry.Policy
	MaxTokens int // used when req.MaxTokens == 0; default DefaultMaxTokens
}

// Client implements contracts.ModelClient on Amazon Bedrock's
// ConverseStream. It keeps no state between calls and is safe for
// concurrent use.
type Client struct {
	api       ConverseStreamAPI
	policy    retry.Policy
	maxTokens int
}

var (
	_ contracts.ModelClient  = (*Client)(nil)
	_ contracts.ModelChecker = (*Client)(nil)
)

// New returns a Client calling cfg.Client.
func New(cfg Config) (*Client, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("bedrock client: no ConverseStream API: %w", contracts.ErrInvalid)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("bedrock client: MaxTokens %d is negative: %w", cfg.MaxTokens, contracts.ErrInvalid)
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	return &Client{api: cfg.Client, policy: cfg.Retry, maxTokens: cfg.MaxTokens}, nil
}

// NewFromConfig builds the bedrockruntime client from awsCfg (region and
// IAM credentials: the default chain on AWS, a role, a profile) and returns
// a Client on it; cfg.Client is replaced. The SDK's own retryer is disabled
// so that retry.Run is the one rule, and requests are always SigV4 signed:
// a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK, a bearer token provider) is
// never used.
func NewFromConfig(awsCfg aws.Config, cfg Config) (*Client, error) {
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("bedrock client: no AWS region configured: %w", contracts.ErrInvalid)
	}
	if awsCfg.Credentials == nil {
		return nil, fmt.Errorf("bedrock client: no AWS credentials (Bedrock is called with IAM credentials only): %w", contracts.ErrInvalid)
	}
	cfg.Client = bedrockruntime.NewFromConfig(awsCfg, iamOnly)
	return New(cfg)
}

// errNoCredentials is what a client without IAM credentials gets instead
// of falling back to a Bedrock API key.
var errNoCredentials = errors.New("no AWS credentials: Bedrock is called with IAM credentials only (a role, a profile, the default chain), never an API key")

// iamOnly turns the SDK's retryer off, sends plain request bodies
// (plainBodies) and signs with SigV4: the SDK would
// otherwise prefer a Bedrock API key found in AWS_BEARER_TOKEN_BEDROCK. The
// bearer scheme stays registered in the SDK, so its token provider is
// replaced by one that refuses (a nil provider would panic).
func iamOnly(o *bedrockruntime.Options) {
	if o.HTTPClient != nil {
		o.HTTPClient = plainBodies{o.HTTPClient}
	}
	o.Retryer = aws.NopRetryer{}
	o.RetryMaxAttempts = 0
	o.AuthSchemePreference = []string{"sigv4"}
	o.BearerAuthTokenProvider = bearer.TokenProviderFunc(func(context.Context) (bearer.Token, error) {
		return bearer.Token{}, errNoCredentials
	})
}

// plainBodies sends each request with a body that only reads (its WriteTo
// hidden). smithy-go closes a request's body once the response headers are
// in, and its closed body's WriteTo answers io.EOF; net/http reads the body
// once more after Content-Length bytes and, if that read comes after the
// close (its write loop was descheduled, as on a loaded machine), takes the
// io.EOF for a write error and closes the connection, cutting the event
// stream just begun ("use of closed network connection"), or before its
// first event. Read on a closed body is a clean io.EOF.
type plainBodies struct{ next bedrockruntime.HTTPClient }

func (c plainBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = struct{ io.ReadCloser }{r.Body}
	}
	return c.next.Do(r)
}

// Stream runs one model step: req.Model is the model id or inference
// profile, req.System the system prompt, req.Messages the transcript,
// req.Tools the tools offered. Text deltas are emitted as they arrive, each
// tool call once complete, the usage at the end. Failures before any output
// are retried under the Config's retry.Policy; a request Bedrock can never
// accept ends wrapping contracts.ErrInvalid; a stream that breaks after
// output started is returned as an error (the engine makes a new attempt).
func (c *Client) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	in, err := buildInput(req, c.maxTokens)
	if err != nil {
		return contracts.ModelResponse{}, fmt.Errorf("building bedrock request: %w: %w", contracts.ErrInvalid, err)
	}
	return retry.Run(ctx, c.policy, classify, emit, func(ctx context.Context, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
		return c.streamOnce(ctx, in, emit)
	})
}

// CheckModel rejects a model string Bedrock can never resolve, when a
// session is created rather than at its first turn.
func (c *Client) CheckModel(model string) error {
	if strings.TrimSpace(model) == "" || strings.ContainsAny(model, " \t\r\n") {
		return fmt.Errorf("bedrock model %q: want a model id, inference profile id or ARN: %w", model, contracts.ErrInvalid)
	}
	return nil
}
