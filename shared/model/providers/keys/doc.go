// Package keys is what a deployment knows of its model providers without
// their SDKs: the variables and secret references of the API keys, how a
// key is resolved (on first use, cached) and how a model string is
// checked. providers.FromEnv builds the real clients on it; Checks gives
// the clients of a process that only checks model strings (the api,
// tools, commit, repair and workflow functions), so those binaries link
// no provider SDK.
//
// It may import shared/contracts, shared/model/scripted, shared/secrets and
// the standard library.
//
// # Usage
//
//	models := keys.Checks(keys.Config{Getenv: getenv, Secrets: resolver, Bedrock: true})
package keys
