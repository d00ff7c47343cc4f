// Package model is the home of the model clients (contracts.ModelClient,
// docs/DESIGN.md §9). It holds no code:
//
//	scripted/   deterministic scenarios (the tests' and `make run`'s model)
//	anthropic/  the Messages API (SSE)
//	openai/     Chat Completions (SSE; any compatible base URL)
//	bedrock/    ConverseStream (AWS event stream, SigV4 only)
//	retry/      the one retry rule every provider follows
//	providers/  which providers a deployment serves, from the environment
//
// It may import nothing.
package model
