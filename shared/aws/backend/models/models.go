package models

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/providers"
	"github.com/cairnrun/cairn/shared/secrets"
)

var _ backend.ModelsFunc = FromEnv

// FromEnv builds the clients of every provider the environment configures
// (providers.FromEnv; Bedrock on the function's own AWS configuration).
func FromEnv(getenv func(string) string, res secrets.Resolver, awsCfg aws.Config) (map[string]contracts.ModelClient, error) {
	return providers.FromEnv(providers.Config{
		Getenv:  getenv,
		Secrets: res,
		AWS:     func(context.Context) (aws.Config, error) { return awsCfg, nil },
	})
}
