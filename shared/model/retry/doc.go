// Package retry is the one retry rule every model provider follows
// (docs/DESIGN.md §3, §9): an attempt that fails before any output streamed
// is retried with jittered exponential backoff when the failure is throttling,
// overload or a server error — waiting at least what the provider's
// Retry-After asks — and never once output has started: a broken stream is
// returned as an error, and the model phase makes a new attempt under a new
// stream key. A failure that can never succeed (bad request, bad key) is
// returned wrapping contracts.ErrInvalid, which ends the turn FAILED
// "model_error: …" instead of retrying.
//
// It may import shared/contracts, the OpenTelemetry API (retries as events on
// the caller's span) and the standard library.
//
// # Usage
//
//	return retry.Run(ctx, p.policy, classify, emit, func(ctx context.Context, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
//		return p.streamOnce(ctx, req, emit)
//	})
package retry
