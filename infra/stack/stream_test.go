package stack_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/cairnrun/cairn/infra/stack"
)

// The event streams have a function URL of their own: IAM-authorized
// (SigV4, service "lambda"), its response streamed (API Gateway's is
// buffered), no CORS (an EventSource cannot sign: browsers long-poll
// through the API), no permission for anyone to invoke it — callers need
// their own identity policy — and its URL is an output.
func TestStreamFunctionURLIsIAMAndStreams(t *testing.T) {
	for _, tp := range all(t) {
		fn := tp.id(tp.s.Functions[stack.FnStream])
		urls := tp.ofType("AWS::Lambda::Url")
		if len(urls) != 1 {
			t.Fatalf("%s: %d function URLs, want 1 (the stream function's)", tp.name, len(urls))
		}
		p := tp.props(urls[0])
		if p["AuthType"] != "AWS_IAM" || p["InvokeMode"] != "RESPONSE_STREAM" || js(p["TargetFunctionArn"]) != getAtt(fn, "Arn") || p["Cors"] != nil || p["Qualifier"] != nil {
			t.Errorf("%s stream URL: %s, want AuthType AWS_IAM, InvokeMode RESPONSE_STREAM on the stream function, no CORS", tp.name, js(p))
		}
		for _, id := range tp.ofType("AWS::Lambda::Permission") {
			if pp := tp.props(id); refersTo(pp["FunctionName"], fn) {
				t.Errorf("%s: permission %s on the stream function: %s (its callers bring their own identity policy)", tp.name, id, js(pp))
			}
		}
		outs := obj((*tp.a.ToJSON())["Outputs"])
		if out := obj(outs["StreamUrl"]); js(out["Value"]) != getAtt(urls[0], "FunctionUrl") {
			t.Errorf("%s: StreamUrl output %s, want the URL's FunctionUrl", tp.name, js(out))
		}
		if out := obj(outs["StreamFunctionArn"]); js(out["Value"]) != getAtt(fn, "Arn") {
			t.Errorf("%s: StreamFunctionArn output %s, want the function's ARN (callers' policies name it)", tp.name, js(out))
		}
	}
}

// writes: any action that changes something (the role's own log lines
// aside): a write to the table, the bucket, a queue, a secret, a schedule,
// a role, an invocation.
var writes = regexp.MustCompile(`:(Put|Update|Delete|BatchWrite|Write|Create|Send|Tag|Untag|Pass|Invoke|Run|Stop|Start|Change|Receive|Restore|Transact|PartiQL)`)

// The stream function's role only reads: GetItem and Query on the table
// and its indexes, GetObject (and ListBucket, so a miss is a 404) on the
// bucket, plus its own log lines (and X-Ray segments with adot). No write
// of any kind, no queue, no secret.
func TestStreamRoleOnlyReads(t *testing.T) {
	reads := []string{"dynamodb:GetItem", "dynamodb:Query", "s3:GetObject", "s3:ListBucket", "logs:CreateLogStream", "logs:PutLogEvents"}
	for _, tp := range all(t) {
		role := tp.id(tp.s.Roles[stack.FnStream])
		if got := tp.actions(role); js(got) != js(join(reads)) {
			t.Errorf("%s stream role actions %v, want %v", tp.name, got, join(reads))
		}
		for _, st := range tp.statements(role) {
			for _, a := range st.Actions {
				if st.Effect == "Allow" && writes.MatchString(a) && a != "logs:CreateLogStream" && a != "logs:PutLogEvents" {
					t.Errorf("%s stream role: %s (statement %s) writes", tp.name, a, st.Sid)
				}
			}
		}
	}
}

// The stream function gets the table and bucket it reads — no queue URL,
// no isolate, no key, no sandbox setting — and the operators wherever the
// api has them: it authorizes the same callers the same way.
func TestStreamEnvironment(t *testing.T) {
	for _, tp := range all(t) {
		env := envOf(tp.props(tp.id(tp.s.Functions[stack.FnStream])))
		api := envOf(tp.props(tp.id(tp.s.Functions[stack.FnAPI])))
		want := []string{stack.EnvTable, stack.EnvBucket}
		if api[stack.EnvOperators] != nil {
			want = append(want, stack.EnvOperators)
		}
		var got []string
		for k := range env {
			if !regexp.MustCompile(`^OTEL_`).MatchString(k) {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if js(got) != js(want) {
			t.Errorf("%s stream environment %v, want %v", tp.name, got, want)
		}
		if js(env[stack.EnvTable]) != ref(tp.id(tp.s.Table)) || js(env[stack.EnvBucket]) != ref(tp.id(tp.s.Bucket)) || js(env[stack.EnvOperators]) != js(api[stack.EnvOperators]) {
			t.Errorf("%s stream: table %s bucket %s operators %s", tp.name, js(env[stack.EnvTable]), js(env[stack.EnvBucket]), js(env[stack.EnvOperators]))
		}
	}
}

// A stream lasts api.SSEMaxDuration and ends with "expired" (the client
// resumes from it); the function's timeout leaves that room and a margin,
// so the timeout never cuts a stream (shared/api/sse.go, read here).
func TestStreamOutlastsItsStream(t *testing.T) {
	if _, err := os.Stat(filepath.Join(repo, "shared")); err != nil {
		t.Skipf("runtime source not beside infra/: %v", err)
	}
	const file = "shared/api/sse.go"
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repo, file), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	seconds := map[string]int{} // N * time.Minute|Second constants
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if i >= len(vs.Values) {
				continue
			}
			b, ok := vs.Values[i].(*ast.BinaryExpr)
			if !ok || b.Op != token.MUL {
				continue
			}
			lit, _ := b.X.(*ast.BasicLit)
			sel, _ := b.Y.(*ast.SelectorExpr)
			if lit == nil || sel == nil {
				continue
			}
			v, _ := strconv.Atoi(lit.Value)
			seconds[name.Name] = v * map[string]int{"Second": 1, "Minute": 60}[sel.Sel.Name]
		}
		return true
	})
	if seconds["SSEMaxDuration"] != stack.SSEMaxDurationSeconds || seconds["SSEDeadlineMargin"] == 0 {
		t.Fatalf("%s: SSEMaxDuration %d s, SSEDeadlineMargin %d s; infra has SSEMaxDurationSeconds %d", file, seconds["SSEMaxDuration"], seconds["SSEDeadlineMargin"], stack.SSEMaxDurationSeconds)
	}
	for _, tp := range all(t) {
		to := int(num(tp.props(tp.id(tp.s.Functions[stack.FnStream]))["Timeout"]))
		if to != stack.StreamTimeoutSeconds || to < seconds["SSEMaxDuration"]+seconds["SSEDeadlineMargin"]+30 || to > 900 {
			t.Errorf("%s stream: Timeout %d s, want %d: above a stream's %d s and its margin, at most Lambda's 900", tp.name, to, stack.StreamTimeoutSeconds, seconds["SSEMaxDuration"])
		}
	}
}
