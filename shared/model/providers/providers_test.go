package providers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/providers"
	"github.com/cairnrun/cairn/shared/model/providers/keys"
)

type checker interface{ CheckModel(string) error }

func build(t *testing.T, env map[string]string, withAWS bool) map[string]contracts.ModelClient {
	t.Helper()
	cfg := providers.Config{Getenv: func(k string) string { return env[k] }}
	if withAWS {
		cfg.AWS = func(context.Context) (aws.Config, error) { return aws.Config{Region: "us-east-1"}, nil }
	}
	m, err := providers.FromEnv(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMissingKeyNamesTheVariable(t *testing.T) {
	m := build(t, map[string]string{}, false)
	for provider, want := range map[string]string{"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"} {
		err := m[provider].(checker).CheckModel("some-model")
		if !errors.Is(err, contracts.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s without a key: %v, want ErrInvalid naming %s", provider, err, want)
		}
	}
	if _, ok := m["bedrock"]; ok {
		t.Error("bedrock served without AWS configuration")
	}
	if _, ok := m["scripted"]; !ok {
		t.Error("scripted missing")
	}
}

func TestKeysByVariableOrReference(t *testing.T) {
	m := build(t, map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-direct",
		"CAIRN_OPENAI_KEY":  "env:MY_OPENAI", "MY_OPENAI": "sk-openai-ref",
	}, true)
	for _, p := range []string{"anthropic", "openai", "bedrock"} {
		if err := m[p].(checker).CheckModel("some-model"); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := m["bedrock"].(checker).CheckModel(""); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("empty bedrock model: %v", err)
	}
	// A reference that does not resolve names the reference, not a value.
	m = build(t, map[string]string{"CAIRN_ANTHROPIC_KEY": "env:NOPE"}, false)
	if err := m["anthropic"].(checker).CheckModel("x"); err == nil || !strings.Contains(err.Error(), "env:NOPE") {
		t.Errorf("unresolvable reference: %v", err)
	}
}

func TestOpenAICompatibleServerNeedsNoKey(t *testing.T) {
	m := build(t, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, false)
	if err := m["openai"].(checker).CheckModel("llama3"); err != nil {
		t.Fatalf("Ollama-style base URL without a key: %v", err)
	}
}

// keys.Checks (the clients of a function that never calls a model) answer
// CheckModel exactly as FromEnv's clients do, and never stream.
func TestChecksAnswerAsTheClients(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"},
		{"CAIRN_OPENAI_KEY": "env:NOPE", "OPENAI_BASE_URL": "http://x/v1", "CAIRN_ANTHROPIC_KEY": "env:K", "K": "v"},
	} {
		full := build(t, env, true)
		checks := keys.Checks(keys.Config{Getenv: func(k string) string { return env[k] }, Bedrock: true})
		if len(full) != len(checks) {
			t.Fatalf("%v: providers %d vs %d", env, len(full), len(checks))
		}
		for p, c := range full {
			if p == "scripted" {
				continue // the same client in both
			}
			for _, name := range []string{"", "some-model", "demo"} {
				want, got := errString(c.(checker).CheckModel(name)), errString(checks[p].(checker).CheckModel(name))
				if want != got {
					t.Errorf("%v: %s:%s: checks say %q, the client %q", env, p, name, got, want)
				}
			}
		}
		if _, err := checks["anthropic"].Stream(context.Background(), contracts.ModelRequest{}, nil); !errors.Is(err, contracts.ErrUnavailable) {
			t.Errorf("a check-only client streamed: %v", err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
