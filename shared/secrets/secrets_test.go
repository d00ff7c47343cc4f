package secrets_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/secrets"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

func TestEnvReferences(t *testing.T) {
	env := map[string]string{"MY_KEY": "s3cret"}
	r := secrets.Resolver{Getenv: func(k string) string { return env[k] }}
	ctx := context.Background()
	if v, err := r.Resolve(ctx, "env:MY_KEY"); err != nil || v != "s3cret" {
		t.Fatalf("%q %v", v, err)
	}
	cases := map[string]error{
		"env:MISSING": contracts.ErrNotFound, "env:": contracts.ErrInvalid, "s3cret": contracts.ErrInvalid,
		"": contracts.ErrInvalid, "secretsmanager:x": contracts.ErrInvalid, // no client configured
	}
	for ref, want := range cases {
		_, err := r.Resolve(ctx, ref)
		if !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", ref, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") && ref != "s3cret" {
			t.Errorf("%q: the error shows a secret: %v", ref, err)
		}
	}
}

// Against Secrets Manager on the local endpoint (moto or LocalStack).
func TestSecretsManagerReferences(t *testing.T) {
	cfg := awstest.Config(t)
	ctx := context.Background()
	sm := secretsmanager.NewFromConfig(cfg)
	name := awstest.Name(t, "key")
	out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: &name, SecretString: new("v4lue")})
	if err != nil {
		t.Fatal(err)
	}
	r := secrets.Resolver{SecretsManager: sm}
	for _, ref := range []string{"secretsmanager:" + name, *out.ARN} {
		if v, err := r.Resolve(ctx, ref); err != nil || v != "v4lue" {
			t.Fatalf("%s: %q %v", ref, v, err)
		}
	}
	if _, err := r.Resolve(ctx, "secretsmanager:"+name+"-absent"); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("absent secret: %v", err)
	}
}
