package turn

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// phaseKey marks a context with the queue kind of the handler run it
// belongs to (Handle): conflicts are counted per phase.
type phaseKey struct{}

func phaseOf(ctx context.Context) string {
	if p, _ := ctx.Value(phaseKey{}).(string); p != "" {
		return p
	}
	return "api" // accept, approve, cancel, retry: a request's writes
}

// ms is d in (fractional) milliseconds, never negative (clocks of two
// processes disagree).
func ms(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return float64(d) / float64(time.Millisecond)
}

// lost reports whether err means another writer won (the caller stops),
// counting it: an event on the current span and the lease-conflict metric.
func (e *Engine) lost(ctx context.Context, err error) bool {
	if !errors.Is(err, contracts.ErrConflict) {
		return false
	}
	trace.SpanFromContext(ctx).AddEvent("cairn.conflict", trace.WithAttributes(attribute.String("cairn.conflict", err.Error())))
	telemetry.LeaseConflicts.Record(ctx, 1, phaseOf(ctx))
	return true
}

// ended counts a turn that just ended (the terminal write won).
func ended(ctx context.Context, done contracts.Submission) {
	outcome, reason := "committed", "none"
	switch done.Phase {
	case contracts.PhaseFailed:
		outcome, reason = "failed", reasonClass(done.Error)
	case contracts.PhaseCancelled:
		outcome, reason = "cancelled", "cancelled"
	}
	trace.SpanFromContext(ctx).AddEvent("cairn.turn_ended", trace.WithAttributes(attribute.String("cairn.outcome", outcome), attribute.String("cairn.reason", reason)))
	telemetry.Turns.Record(ctx, 1, outcome, reason)
}

// reasonClass is a failure reason's class, fit for a dimension: its first
// word up to a colon or space ("limit_tripped:steps" → "limit_tripped"),
// lower-case letters, digits and underscores only, else "other".
func reasonClass(reason string) string {
	class, _, _ := strings.Cut(reason, ":")
	class, _, _ = strings.Cut(class, " ")
	if class == "" || len(class) > 40 {
		return "other"
	}
	for _, r := range class {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return "other"
		}
	}
	return class
}

// describe puts sub's principal and attempt on the handler run's span
// (again after a lease, which counts an attempt).
func describe(ctx context.Context, sub contracts.Submission) {
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("cairn.principal", sub.Owner), attribute.Int("cairn.attempt", sub.Attempt))
}

type sandboxKindKey struct{}

// withSandboxKind marks the tools phase's context with its sandbox's kind
// ("" = the deployment's default), for its tool spans.
func withSandboxKind(ctx context.Context, kind string) context.Context {
	if kind == "" {
		kind = "default"
	}
	return context.WithValue(ctx, sandboxKindKey{}, kind)
}

func sandboxKind(ctx context.Context) string {
	k, _ := ctx.Value(sandboxKindKey{}).(string)
	return k
}

// modelDim is a model call's "model" dimension: its price-table entry
// without its wildcard ("claude-sonnet-4" for "anthropic:claude-sonnet-4*";
// "any" for a provider-wide one), else "other" — a session names any model it likes,
// and a metric dimension must not take what a tenant makes up.
func (e *Engine) modelDim(specModel string) string {
	_, entry, ok := e.priceEntry(specModel)
	if !ok {
		return "other"
	}
	_, name, _ := strings.Cut(entry, ":")
	if name = strings.TrimRight(name, "*"); name == "" {
		return "any" // a provider-wide entry ("scripted:*")
	}
	return name
}

// toolDim is a tool call's "tool" dimension: a bound tool's name, "mcp"
// for any MCP server's tool (their names embed the session's server
// names), "unknown" for a name the model made up.
func toolDim(ts contracts.Toolset, name string) string {
	switch {
	case strings.HasPrefix(name, "mcp__"):
		return "mcp"
	case ts.Effect(name) == "":
		return "unknown"
	}
	return name
}
