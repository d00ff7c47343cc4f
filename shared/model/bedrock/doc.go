// Package bedrock is the Amazon Bedrock model provider (docs/DESIGN.md §9),
// the default on AWS: contracts.ModelClient on the Converse API's
// ConverseStream, authenticated with IAM only — requests are SigV4 signed
// with the runtime's credentials (the Lambda role, a profile), and no API key
// exists in any environment.
//
// It owns the mapping of a ModelRequest onto Converse (system blocks;
// user/assistant messages, consecutive same-role messages merged, tool
// nodes as user messages of toolResult blocks; tools as toolSpec with a JSON
// schema; inferenceConfig.maxTokens), the reading of the event stream (text
// deltas emitted as they arrive, toolUse input fragments joined and emitted
// as one call at contentBlockStop, messageStop → stop reason, metadata →
// usage emitted once at the end), and the classification of Bedrock's errors
// for retry.Run, which is the one retry rule: the SDK's retryer is off.
// Throttling, overload, 5xx and broken connections are retried before any
// output (waiting at least Retry-After); ValidationException, AccessDenied,
// ResourceNotFound and other 4xx end the turn FAILED "model_error: …" with a
// hint (e.g. enable the model in the Bedrock console). A stream that breaks
// after output started is returned as an error and the engine makes a new
// attempt under a new stream key.
//
// It may import shared/contracts, shared/model/retry, the standard library
// and the AWS SDK.
//
// # Usage
//
//	awsCfg, err := config.LoadDefaultConfig(ctx) // region + IAM credentials
//	m, err := bedrock.NewFromConfig(awsCfg, bedrock.Config{MaxTokens: 4096})
//	ports.Models["bedrock"] = m
//	// a session spec then names "bedrock:us.anthropic.claude-3-5-sonnet-20241022-v2:0"
//	resp, err := m.Stream(ctx, contracts.ModelRequest{Model: "anthropic.claude-3-5-sonnet-20241022-v2:0", Messages: path}, emit)
package bedrock
