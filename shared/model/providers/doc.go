// Package providers builds the model clients a deployment serves from its
// environment: "scripted" always; "anthropic" and "openai" with their API
// keys read by reference (an environment variable, or AWS Secrets Manager)
// when a step needs them; "bedrock" with IAM credentials, no key at all.
// A session spec (or `cairn run --model provider:model`) picks one.
//
// Keys are never stored in a session spec, a log line or an error: a
// missing key is reported by the name of the variable to set.
//
// It may import shared/contracts, shared/model/anthropic,
// shared/model/bedrock, shared/model/openai, shared/model/providers/keys,
// shared/model/scripted, shared/secrets, the standard library and the AWS SDK.
//
// # Usage
//
//	models, err := providers.FromEnv(providers.Config{Getenv: os.Getenv, Secrets: resolver, AWS: loadAWS})
//	rt, err := assemble.New(assemble.Ports{Models: models, …}, cfg)
package providers
