// Package models is the model function's part of the AWS backend: the
// model providers' clients with their SDKs (Anthropic, OpenAI, Bedrock),
// built by shared/model/providers. Only a main that calls models links
// them:
//
//	rt, err := backend.Boot(ctx, os.Getenv, log, backend.Serves{Models: models.FromEnv})
//
// It may import shared/aws/backend, shared/contracts, shared/model/providers,
// shared/secrets, the standard library and the AWS SDK.
package models
