package keys

import (
	"context"
	"fmt"
	"sync"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/secrets"
)

// Environment variables of the keyed providers.
const (
	EnvAnthropicKey    = "ANTHROPIC_API_KEY"
	EnvAnthropicKeyRef = "CAIRN_ANTHROPIC_KEY" // a secret reference: secretsmanager:ID, an ARN, or env:NAME
	EnvAnthropicURL    = "ANTHROPIC_BASE_URL"
	EnvOpenAIKey       = "OPENAI_API_KEY"
	EnvOpenAIKeyRef    = "CAIRN_OPENAI_KEY"
	EnvOpenAIURL       = "OPENAI_BASE_URL"
)

// Config is where keys come from.
type Config struct {
	Getenv  func(string) string
	Secrets secrets.Resolver // Getenv defaults to Config.Getenv
	// Bedrock: the deployment has AWS credentials, so "bedrock" is served.
	Bedrock bool
}

// Provider is what is known of a keyed provider without its SDK.
type Provider struct {
	// Key returns the API key (resolved on first use, then cached); nil for
	// an OpenAI-compatible server given by its base URL alone (no key).
	Key func(context.Context) (string, error)
	// Check reports, without a model call, whether the provider can be
	// used: its key resolves (or none is needed).
	Check   func(context.Context) error
	BaseURL string
}

// Anthropic is the "anthropic" provider's key and base URL.
func Anthropic(cfg Config) Provider {
	k := keyOf(cfg, "anthropic", EnvAnthropicKeyRef, EnvAnthropicKey)
	return Provider{Key: k.get, Check: k.check, BaseURL: cfg.Getenv(EnvAnthropicURL)}
}

// OpenAI is the "openai" provider's key and base URL: with a base URL and
// no key reference (Ollama, vLLM) it needs no key.
func OpenAI(cfg Config) Provider {
	k := keyOf(cfg, "openai", EnvOpenAIKeyRef, EnvOpenAIKey)
	p := Provider{Key: k.get, Check: k.check, BaseURL: cfg.Getenv(EnvOpenAIURL)}
	if p.BaseURL != "" && k.ref == "" {
		p.Key, p.Check = nil, func(context.Context) error { return nil }
	}
	return p
}

// CheckKeyed is a keyed provider's CheckModel: a model name, and a key.
func CheckKeyed(name string, check func(context.Context) error) error {
	if name == "" {
		return fmt.Errorf("model name is empty (want provider:model): %w", contracts.ErrInvalid)
	}
	return check(context.Background())
}

// CheckBedrock is bedrock's CheckModel (IAM: nothing but the model id).
func CheckBedrock(name string) error {
	if name == "" {
		return fmt.Errorf("bedrock model id is empty (want bedrock:<model id>): %w", contracts.ErrInvalid)
	}
	return nil
}

// Checks are the model clients of a process that checks model strings but
// never calls a provider (every Lambda but the model function): "scripted"
// in full (it has no SDK), "anthropic", "openai" and "bedrock" answering
// CheckModel exactly as providers.FromEnv's clients do, and refusing to
// stream. None of the providers' SDKs is linked.
func Checks(cfg Config) map[string]contracts.ModelClient {
	a, o := Anthropic(cfg), OpenAI(cfg)
	m := map[string]contracts.ModelClient{
		"scripted":  scripted.New(),
		"anthropic": checkOnly{"anthropic", func(n string) error { return CheckKeyed(n, a.Check) }},
		"openai":    checkOnly{"openai", func(n string) error { return CheckKeyed(n, o.Check) }},
	}
	if cfg.Bedrock {
		m["bedrock"] = checkOnly{"bedrock", CheckBedrock}
	}
	return m
}

var _ contracts.ModelChecker = checkOnly{}

// checkOnly checks model strings and never streams.
type checkOnly struct {
	provider string
	check    func(string) error
}

func (c checkOnly) CheckModel(name string) error { return c.check(name) }

func (c checkOnly) Stream(context.Context, contracts.ModelRequest, func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	return contracts.ModelResponse{}, fmt.Errorf("model provider %s is not called in this process (the model function calls it): %w", c.provider, contracts.ErrUnavailable)
}

type key struct {
	provider, ref, hint string
	res                 secrets.Resolver
	mu                  sync.Mutex
	val                 string
}

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

// get resolves the key on first use and caches it; a missing one names
// the variable to set.
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
