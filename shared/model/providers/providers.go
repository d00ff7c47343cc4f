package providers

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/anthropic"
	"github.com/cairnrun/cairn/shared/model/bedrock"
	"github.com/cairnrun/cairn/shared/model/openai"
	"github.com/cairnrun/cairn/shared/model/providers/keys"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/secrets"
)

// Environment variables read by FromEnv (defined by package keys).
const (
	EnvAnthropicKey    = keys.EnvAnthropicKey
	EnvAnthropicKeyRef = keys.EnvAnthropicKeyRef // a secret reference: secretsmanager:ID, an ARN, or env:NAME
	EnvAnthropicURL    = keys.EnvAnthropicURL
	EnvOpenAIKey       = keys.EnvOpenAIKey
	EnvOpenAIKeyRef    = keys.EnvOpenAIKeyRef
	EnvOpenAIURL       = keys.EnvOpenAIURL
)

// Config is where FromEnv reads from.
type Config struct {
	Getenv  func(string) string
	Secrets secrets.Resolver
	// AWS returns the SDK config for Bedrock (called once, on first use);
	// nil = Bedrock is not served.
	AWS func(ctx context.Context) (aws.Config, error)
}

// FromEnv returns the model clients by provider name. Clients are built
// now; keys and AWS configuration are resolved on first use, so a missing
// key fails the session that needs it — at creation, through CheckModel —
// and not the whole runtime. Keys and checks are package keys' (what a
// process that only checks model strings uses without the SDKs).
func FromEnv(cfg Config) (map[string]contracts.ModelClient, error) {
	kc := keys.Config{Getenv: cfg.Getenv, Secrets: cfg.Secrets}
	models := map[string]contracts.ModelClient{"scripted": scripted.New()}
	ak := keys.Anthropic(kc)
	a, err := anthropic.New(anthropic.Config{Key: ak.Key, BaseURL: ak.BaseURL})
	if err != nil {
		return nil, err
	}
	models["anthropic"] = checked{a, ak.Check}
	ok := keys.OpenAI(kc)
	o, err := openai.New(openai.Config{Key: ok.Key, BaseURL: ok.BaseURL})
	if err != nil {
		return nil, err
	}
	models["openai"] = checked{o, ok.Check}
	if cfg.AWS != nil {
		models["bedrock"] = &lazyBedrock{load: cfg.AWS}
	}
	return models, nil
}

var (
	_ contracts.ModelChecker = checked{}
	_ contracts.ModelChecker = (*lazyBedrock)(nil)
)

// checked adds CheckModel (used when a session is created) to a client.
type checked struct {
	contracts.ModelClient
	check func(context.Context) error
}

func (c checked) CheckModel(name string) error { return keys.CheckKeyed(name, c.check) }

// lazyBedrock builds the Bedrock client on first use: loading the AWS
// configuration reads files and the environment, which a runtime that
// never calls Bedrock should not depend on.
type lazyBedrock struct {
	load   func(ctx context.Context) (aws.Config, error)
	once   sync.Mutex
	client *bedrock.Client
}

func (l *lazyBedrock) get(ctx context.Context) (*bedrock.Client, error) {
	l.once.Lock()
	defer l.once.Unlock()
	if l.client != nil {
		return l.client, nil
	}
	cfg, err := l.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("bedrock: loading the AWS configuration: %w", err)
	}
	c, err := bedrock.NewFromConfig(cfg, bedrock.Config{})
	if err != nil {
		return nil, err
	}
	l.client = c
	return c, nil
}

func (l *lazyBedrock) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	c, err := l.get(ctx)
	if err != nil {
		return contracts.ModelResponse{}, err
	}
	return c.Stream(ctx, req, emit)
}

// CheckModel refuses an empty model id; credentials are checked by IAM when
// the step runs.
func (l *lazyBedrock) CheckModel(name string) error {
	return keys.CheckBedrock(name)
}
