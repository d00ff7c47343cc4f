package workflow

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// A run is one trace. Start begins it with the root span
// "cairn.workflow.start <workflow name>" (linked to the caller's span, if
// any: an API request, a run_workflow call) and stores its traceparent on
// the run (WorkflowRun.Trace). Every wake-up carries the sending span's
// context (Message.Trace); each one Handle serves is a span
// "cairn.workflow.evaluate" in the run's trace: the child of the span that
// sent it when that one is in the run's trace (the start, an earlier
// evaluation), else of the start span, linked to the sender (a node turn's
// end, a repair pass). The node turns an evaluation starts are traces of
// their own (a turn is one trace, from accept to commit) whose accept span
// links to the evaluation (turn.AcceptOptions.Link) — also when a repair
// evaluation starts them again.

// startSpan begins the run's trace.
func startSpan(ctx context.Context, run contracts.WorkflowRun) (context.Context, trace.Span) {
	name := run.WorkflowName
	if name == "" {
		name = run.WorkflowID
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithAttributes(attribute.String("cairn.run_id", run.ID),
		attribute.String("cairn.workflow.id", run.WorkflowID), attribute.String("cairn.workflow.name", name))}
	if caller := trace.SpanContextFromContext(ctx); caller.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller}))
	}
	if run.ScheduleID != "" {
		opts = append(opts, trace.WithAttributes(attribute.String("cairn.schedule_id", run.ScheduleID)))
	}
	return telemetry.Tracer().Start(ctx, "cairn.workflow.start "+name, opts...)
}

// evalSpan is the span of one wake-up of run: in the run's trace (see
// above), or a root of its own for a run that has none (started with
// tracing off).
func evalSpan(ctx context.Context, run contracts.WorkflowRun, m contracts.Message) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("cairn.run_id", run.ID), attribute.String("cairn.workflow.id", run.WorkflowID),
		attribute.String("cairn.wake", m.Nonce), attribute.Bool("cairn.workflow.repair", strings.HasPrefix(m.Nonce, RepairNonce)),
		attribute.Int("cairn.workflow.evaluations", run.Evaluations), attribute.String("cairn.workflow.status", string(run.Status)))}
	parent := run.Trace
	if m.Trace != "" {
		if sender := spanOf(m.Trace); run.Trace != "" && sender.TraceID() == spanOf(run.Trace).TraceID() {
			parent = m.Trace
		} else {
			opts = append(opts, trace.WithLinks(telemetry.Link(m.Trace)...))
		}
	}
	if spanOf(parent).IsValid() {
		ctx = telemetry.Extract(ctx, parent)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	return telemetry.Tracer().Start(ctx, "cairn.workflow.evaluate", opts...)
}

func spanOf(traceparent string) trace.SpanContext {
	return trace.SpanContextFromContext(telemetry.Extract(context.Background(), traceparent))
}

// counted records an evaluation's node counts on its span.
func counted(ctx context.Context, kv ...attribute.KeyValue) {
	trace.SpanFromContext(ctx).SetAttributes(kv...)
}
