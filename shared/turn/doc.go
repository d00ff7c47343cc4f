// Package turn holds the four phase handlers of a turn — accept, model,
// tools, commit — plus approval decisions and the session's one-at-a-time
// scheduling. Each handler is a function of (ports, message): it re-reads the
// journal, does the one transition it owns, writes its work products under
// deterministic keys before the conditional advance that depends on them,
// then enqueues the next phase. The same methods run behind the embedded
// queue in `cairn dev` and behind SQS in the Lambda functions.
//
// A handler returns nil when it did its work or found nothing to do (a stale
// or duplicate message, a lease held by a live worker, a lost race); it
// returns an error only when the message should be delivered again.
//
// It may import shared/contracts, shared/ids, shared/journal, shared/meter
// (a message carries its turn's orchestration usage on), shared/policy,
// shared/pricing (a turn's estimated cost),
// shared/telemetry (a turn is one trace: spans per phase, model call and
// tool call), the OpenTelemetry API and the standard library.
//
// # Usage
//
//	eng := &turn.Engine{Deps: deps}
//	sub, created, err := eng.Accept(ctx, sessionID, "prompt", idempotencyKey)
//	err = eng.Handle(ctx, msg) // dispatches on msg.Kind
package turn
