package placement_test

import (
	"context"
	"os"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/testkit/spantest"
)

// TestRouterTracesEveryOperation: a local sandbox from the Router makes a
// span for its Acquire and one per method, each with the kind and the
// session, a command's with its exit code and effect id, all under the
// caller's span; no input (the command) is an attribute.
func TestRouterTracesEveryOperation(t *testing.T) {
	exp := spantest.Record(t)
	r := &placement.Router{Default: "local", Kinds: map[string]contracts.SandboxProvider{
		"local": local.NewProvider(t.TempDir(), local.Options{Env: []string{"PATH=" + os.Getenv("PATH")}}),
	}}
	ctx, parent := otel.Tracer("test").Start(context.Background(), "caller")
	sb, err := r.Acquire(ctx, "ses_trace", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "a.txt", Content: "x", CallID: "eff-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Exec(ctx, contracts.ExecRequest{Command: "exit 3", CallID: "eff-2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.ReadFile(ctx, contracts.ReadFileRequest{Path: "missing"}); err == nil {
		t.Fatal("read of a missing file succeeded")
	}
	if err := r.Release(ctx, "ses_trace"); err != nil {
		t.Fatal(err)
	}
	parent.End()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byName[s.Name] = s
	}
	for _, name := range []string{"cairn.sandbox acquire", "cairn.sandbox write_file", "cairn.sandbox exec", "cairn.sandbox read_file", "cairn.sandbox release"} {
		s, ok := byName[name]
		if !ok {
			t.Fatalf("no span %s among %v", name, byName)
		}
		if s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s is not under the caller's span", name)
		}
		if v, _ := spantest.Attr(s, "cairn.session_id"); v.AsString() != "ses_trace" {
			t.Errorf("%s: session %q", name, v.AsString())
		}
		if v, _ := spantest.Attr(s, "cairn.sandbox.kind"); name != "cairn.sandbox release" && v.AsString() != "local" {
			t.Errorf("%s: kind %q", name, v.AsString())
		}
		for _, kv := range s.Attributes {
			if kv.Value.AsString() == "exit 3" || kv.Value.AsString() == "a.txt" {
				t.Errorf("%s carries an input as %s", name, kv.Key)
			}
		}
	}
	exec := byName["cairn.sandbox exec"]
	if v, ok := spantest.Attr(exec, "cairn.sandbox.exit_code"); !ok || v.AsInt64() != 3 {
		t.Errorf("exec span exit code %v (%v)", v.AsInt64(), ok)
	}
	if v, _ := spantest.Attr(exec, "cairn.effect_id"); v.AsString() != "eff-2" {
		t.Errorf("exec span effect id %q", v.AsString())
	}
	if byName["cairn.sandbox read_file"].Status.Code.String() != "Error" {
		t.Errorf("a failed read is not a failed span: %v", byName["cairn.sandbox read_file"].Status)
	}
}

type bare struct{ contracts.SandboxAPI }

type ledgerPart struct{}

func (ledgerPart) CallOutcome(context.Context, string) (contracts.CallOutcome, error) {
	return contracts.CallOutcome{State: contracts.CallDone}, nil
}

type mcpPart struct{}

func (mcpPart) MCP(context.Context, contracts.MCPRequest) (contracts.MCPResponse, error) {
	return contracts.MCPResponse{}, nil
}

type durablePart struct{}

func (durablePart) WorkspaceNotice() string             { return "notice" }
func (durablePart) NoticeGiven(context.Context) error   { return nil }
func (durablePart) SaveWorkspace(context.Context) error { return nil }

// TestTracedKeepsOptionalInterfaces: the tools phase tests a sandbox for
// a ledger, an MCP host and a durable workspace; a traced sandbox has
// exactly those its sandbox has, and passes them through.
func TestTracedKeepsOptionalInterfaces(t *testing.T) {
	for _, tc := range []struct {
		name           string
		api            contracts.SandboxAPI
		ledger, mcp, d bool
	}{
		{"none", bare{}, false, false, false},
		{"ledger", struct {
			bare
			ledgerPart
		}{}, true, false, false},
		{"mcp", struct {
			bare
			mcpPart
		}{}, false, true, false},
		{"durable", struct {
			bare
			durablePart
		}{}, false, false, true},
		{"ledger+mcp", struct {
			bare
			ledgerPart
			mcpPart
		}{}, true, true, false},
		{"ledger+durable", struct {
			bare
			ledgerPart
			durablePart
		}{}, true, false, true},
		{"mcp+durable", struct {
			bare
			mcpPart
			durablePart
		}{}, false, true, true},
		{"all", struct {
			bare
			ledgerPart
			mcpPart
			durablePart
		}{}, true, true, true},
	} {
		got := placement.Traced(tc.api, "local", "s")
		l, isL := got.(contracts.CallLedger)
		_, isM := got.(contracts.MCPHost)
		d, isD := got.(contracts.DurableWorkspace)
		if isL != tc.ledger || isM != tc.mcp || isD != tc.d {
			t.Errorf("%s: ledger %v mcp %v durable %v, want %v %v %v", tc.name, isL, isM, isD, tc.ledger, tc.mcp, tc.d)
		}
		if isL {
			if o, _ := l.CallOutcome(context.Background(), "x"); o.State != contracts.CallDone {
				t.Errorf("%s: the ledger's answer was not passed on: %+v", tc.name, o)
			}
		}
		if isD && d.WorkspaceNotice() != "notice" {
			t.Errorf("%s: the notice was not passed on", tc.name)
		}
	}
}
