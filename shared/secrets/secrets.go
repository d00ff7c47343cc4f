package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// SecretsManagerAPI is the one call Resolve makes.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Resolver reads secrets by reference.
type Resolver struct {
	Getenv         func(string) string
	SecretsManager SecretsManagerAPI // nil: only env references resolve
}

// Resolve returns the secret ref names. Errors name the reference, never a
// value: ErrInvalid for a malformed reference, ErrNotFound for a variable
// that is unset or a secret that does not exist.
func (r Resolver) Resolve(ctx context.Context, ref string) (string, error) {
	switch {
	case strings.HasPrefix(ref, "env:"):
		name := strings.TrimPrefix(ref, "env:")
		if name == "" || r.Getenv == nil {
			return "", fmt.Errorf("secret reference %q: no variable name: %w", ref, contracts.ErrInvalid)
		}
		v := r.Getenv(name)
		if v == "" {
			return "", fmt.Errorf("secret reference %q: %s is not set: %w", ref, name, contracts.ErrNotFound)
		}
		return v, nil
	case strings.HasPrefix(ref, "secretsmanager:"), strings.HasPrefix(ref, "arn:aws:secretsmanager:"):
		id := strings.TrimPrefix(ref, "secretsmanager:")
		if r.SecretsManager == nil {
			return "", fmt.Errorf("secret reference %q: Secrets Manager is not configured here: %w", ref, contracts.ErrInvalid)
		}
		out, err := r.SecretsManager.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &id})
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return "", fmt.Errorf("secret reference %q: no such secret: %w", ref, contracts.ErrNotFound)
		}
		if err != nil {
			return "", fmt.Errorf("secret reference %q: %w", ref, err)
		}
		if out.SecretString == nil || *out.SecretString == "" {
			return "", fmt.Errorf("secret reference %q: the secret has no string value: %w", ref, contracts.ErrInvalid)
		}
		return *out.SecretString, nil
	}
	return "", fmt.Errorf("secret reference %q: want env:NAME, secretsmanager:ID or a Secrets Manager ARN: %w", ref, contracts.ErrInvalid)
}

// Lazy is a SecretsManagerAPI that loads its AWS configuration on first
// use, for runtimes (the embedded one) that may never need it.
func Lazy(load func(ctx context.Context) (aws.Config, error)) SecretsManagerAPI {
	return &lazy{load: load}
}

type lazy struct {
	load   func(ctx context.Context) (aws.Config, error)
	mu     sync.Mutex
	client *secretsmanager.Client
}

func (l *lazy) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	l.mu.Lock()
	if l.client == nil {
		cfg, err := l.load(ctx)
		if err != nil {
			l.mu.Unlock()
			return nil, fmt.Errorf("loading the AWS configuration for Secrets Manager: %w", err)
		}
		l.client = secretsmanager.NewFromConfig(cfg)
	}
	c := l.client
	l.mu.Unlock()
	return c.GetSecretValue(ctx, in, opts...)
}
