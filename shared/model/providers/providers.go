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
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/secrets"
)

// Environment variables read by FromEnv.
const (
	EnvAnthropicKey    = "ANTHROPIC_API_KEY"
	EnvAnthropicKeyRef = "CAIRN_ANTHROPIC_KEY" // a secret reference: secretsmanager:ID, an ARN, or env:NAME
	EnvAnthropicURL    = "ANTHROPIC_BASE_URL"
	EnvOpenAIKey       = "OPENAI_API_KEY"
	EnvOpenAIKeyRef    = "CAIRN_OPENAI_KEY"
	EnvOpenAIURL       = "OPENAI_BASE_URL"
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
// and not the whole runtime.
func FromEnv(cfg Config) (map[string]contracts.ModelClient, error) {
	models := map[string]contracts.ModelClient{"scripted": scripted.New()}
	ak := keyOf(cfg, "anthropic", EnvAnthropicKeyRef, EnvAnthropicKey)
	a, err := anthropic.New(anthropic.Config{Key: ak.get, BaseURL: cfg.Getenv(EnvAnthropicURL)})
	if err != nil {
		return nil, err
	}
	models["anthropic"] = checked{a, ak.check}
	ok := keyOf(cfg, "openai", EnvOpenAIKeyRef, EnvOpenAIKey)
	base := cfg.Getenv(EnvOpenAIURL)
	okey := ok.get
	check := ok.check
	if base != "" && ok.ref == "" {
		okey, check = nil, func(context.Context) error { return nil } // Ollama, vLLM: no key
	}
	o, err := openai.New(openai.Config{Key: okey, BaseURL: base})
	if err != nil {
		return nil, err
	}
	models["openai"] = checked{o, check}
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

func (c checked) CheckModel(name string) error {
	if name == "" {
		return fmt.Errorf("model name is empty (want provider:model): %w", contracts.ErrInvalid)
	}
	return c.check(context.Background())
}

// key resolves one provider's API key by reference and caches it.
type key struct {
	provider, ref, hint string
	res                 secrets.Resolver
	mu                  sync.Mutex
	val                 string
}

// keyOf reads the provider's reference variable, else points at its plain
// environment variable.
func keyOf(cfg Config, provider, refVar, plainVar string) *key {
	k := &key{provider: provider, res: cfg.Secrets, hint: fmt.Sprintf("set %s (or %s to a secret reference such as secretsmanager:ID)", plainVar, refVar)}
	if k.res.Getenv == nil {
		k.res.Getenv = cfg.Getenv
	}
	k.ref = cfg.Getenv(refVar)
	if k.ref == "" && cfg.Getenv(plainVar) != "" {
		k.ref = "env:" + plainVar
	}
	return k
}

func (k *key) get(ctx context.Context) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.val != "" {
		return k.val, nil
	}
	if k.ref == "" {
		return "", fmt.Errorf("%s: no API key configured: %s: %w", k.provider, k.hint, contracts.ErrInvalid)
	}
	v, err := k.res.Resolve(ctx, k.ref)
	if err != nil {
		return "", fmt.Errorf("%s API key: %w (%s)", k.provider, err, k.hint)
	}
	k.val = v
	return v, nil
}

func (k *key) check(ctx context.Context) error {
	_, err := k.get(ctx)
	return err
}

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
	if name == "" {
		return fmt.Errorf("bedrock model id is empty (want bedrock:<model id>): %w", contracts.ErrInvalid)
	}
	return nil
}
