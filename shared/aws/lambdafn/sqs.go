package lambdafn

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// DeadlineMargin is the time SQSHandler keeps in reserve before the
// invocation deadline: with less left it starts no further record and
// reports the rest as failures, so a timeout never cuts a record short
// unreported.
const DeadlineMargin = 2 * time.Second

// SQSHandler returns a Lambda handler for an SQS FIFO batch of the queue of
// kind (contracts.QueueModel, QueueTools, QueueCommit or QueueWorkflow)
// that calls handle for each record's message, in order. The response lists
// in BatchItemFailures the first record whose handle returned an error or
// panicked and every later record (not handled at all), so SQS redelivers
// them and the group's order holds. Records not listed are acknowledged:
// those handled successfully, and poison (a body that is not a valid
// contracts.Message), which is logged at error level instead of being
// retried forever. When less than DeadlineMargin is left before ctx's
// deadline, the remaining records are reported as failures unhandled.
//
// A message of another kind than kind is refused, never handled: it is
// logged at error level and reported as a failure with every later record,
// like a handler error, so SQS keeps it and moves it to the queue's DLQ
// after maxReceiveCount instead of this function acting on another phase's
// work. SQSHandler panics if kind is empty.
//
// Every line is logged with the invocation's ctx, so a
// lambdacontext.NewLogHandler logger adds its request id.
//
// The returned error is always nil: failures travel as batch item failures.
func SQSHandler(kind string, handle func(context.Context, contracts.Message) error, log *slog.Logger, opts ...Option) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	if kind == "" {
		panic("lambdafn: SQSHandler needs the message kind of its queue")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var cfg handlerConfig
	for _, o := range opts {
		o(&cfg)
	}
	vis := cfg.vis
	if vis != nil {
		vis.defaults(kind)
	}
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		ctx = telemetry.WithFunction(ctx, kind) // metrics name the function by its queue
		defer telemetry.Flush(ctx)              // the process may be frozen once this returns
		var resp events.SQSEventResponse
		var k *keeper
		fail := func(i int, hide func(events.SQSMessage) time.Duration) (events.SQSEventResponse, error) {
			if vis != nil {
				k.stop() // no heartbeat may re-hide them after this
				for _, rec := range ev.Records[i:] {
					vis.set(ctx, log, []events.SQSMessage{rec}, hide(rec))
				}
			}
			return failFrom(ev.Records, i), nil
		}
		now := func(events.SQSMessage) time.Duration { return 0 }
		backoff := func(rec events.SQSMessage) time.Duration {
			return vis.backoff(rec.Attributes["ApproximateReceiveCount"])
		}
		if vis != nil {
			vis.set(ctx, log, ev.Records, vis.Hold)
			k = vis.keep(ctx, log, ev.Records)
			defer k.stop()
		}
		last := coalesced(cfg.coalesce, ev.Records)
		for i, rec := range ev.Records {
			if k != nil {
				k.advance(i)
			}
			if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < DeadlineMargin {
				log.WarnContext(ctx, "invocation deadline near; returning the rest of the batch",
					"message_id", rec.MessageId, "remaining", len(ev.Records)-i)
				return fail(i, now)
			}
			m, err := decode(rec.Body)
			if err != nil {
				// It can never succeed: acknowledged, but logged with its
				// body so an operator can see what was lost.
				log.ErrorContext(ctx, "poison message acknowledged without handling",
					"message_id", rec.MessageId, "event_source_arn", rec.EventSourceARN, "error", err,
					"body", capped(rec.Body, MaxLoggedBody), "body_bytes", len(rec.Body))
				continue
			}
			if m.Kind != kind {
				log.ErrorContext(ctx, "refusing a message of another kind: reported as a batch item failure with the rest of the batch; SQS moves it to the queue's DLQ after maxReceiveCount",
					"function_kind", kind, "message_kind", m.Kind, "message_id", rec.MessageId,
					"session_id", m.SessionID, "submission_id", m.SubmissionID, "step", m.Step, "phase", m.Phase,
					"receive_count", rec.Attributes["ApproximateReceiveCount"], "event_source_arn", rec.EventSourceARN)
				return fail(i, backoff)
			}
			if cfg.coalesce != nil && last[cfg.coalesce(m)] > i {
				continue // a later record of the batch does this one's work
			}
			if err := call(ctx, handle, m); err != nil {
				log.WarnContext(ctx, "handler failed; message and the rest of the batch will be redelivered",
					"message_id", rec.MessageId, "session_id", m.SessionID, "submission_id", m.SubmissionID,
					"step", m.Step, "phase", m.Phase, "receive_count", rec.Attributes["ApproximateReceiveCount"],
					"error", err)
				return fail(i, backoff)
			}
		}
		return resp, nil
	}
}

// coalesced maps each non-empty coalescing key of records to the index of
// its last record (nil without a key function).
func coalesced(key func(contracts.Message) string, records []events.SQSMessage) map[string]int {
	if key == nil {
		return nil
	}
	last := map[string]int{}
	for i, rec := range records {
		if m, err := decode(rec.Body); err == nil {
			if k := key(m); k != "" {
				last[k] = i
			}
		}
	}
	return last
}

// MaxLoggedBody caps the body of a poison message in its log line.
const MaxLoggedBody = 4096

// capped returns s cut to at most n bytes, marked when cut.
func capped(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…[cut]"
}

// decode parses a record body; a message without its correlation ids is
// as invalid as one that is not JSON.
func decode(body string) (contracts.Message, error) {
	var m contracts.Message
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return m, fmt.Errorf("decoding message body: %w", err)
	}
	if m.Kind == "" || m.SessionID == "" || m.SubmissionID == "" {
		return m, fmt.Errorf("message %q lacks kind, session_id or submission_id: %w", body, contracts.ErrInvalid)
	}
	return m, nil
}

// call runs handle, turning a panic into an error.
func call(ctx context.Context, handle func(context.Context, contracts.Message) error, m contracts.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v", r)
		}
	}()
	return handle(ctx, m)
}

// failFrom reports records[i:] as batch item failures.
func failFrom(records []events.SQSMessage, i int) events.SQSEventResponse {
	var resp events.SQSEventResponse
	for _, rec := range records[i:] {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
	}
	return resp
}
