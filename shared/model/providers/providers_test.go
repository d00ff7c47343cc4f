package providers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/providers"
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
