package bedrock

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithy "github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/retry"
)

func text(s string) contracts.Block { return contracts.Block{Type: contracts.BlockText, Text: s} }

func use(id, name, input string) contracts.Block {
	return contracts.Block{Type: contracts.BlockToolUse, ToolCall: &contracts.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}}
}

func result(id, content string, isErr bool) contracts.Block {
	return contracts.Block{Type: contracts.BlockToolResult, ToolResult: &contracts.ToolResult{CallID: id, Content: content, IsError: isErr}}
}

func node(role contracts.Role, blocks ...contracts.Block) contracts.Node {
	return contracts.Node{ID: "n", Role: role, Blocks: blocks}
}

// render shows messages as "role: block | block".
func render(t *testing.T, msgs []types.Message) []string {
	var out []string
	for _, m := range msgs {
		var parts []string
		for _, c := range m.Content {
			switch b := c.(type) {
			case *types.ContentBlockMemberText:
				parts = append(parts, "text="+b.Value)
			case *types.ContentBlockMemberToolUse:
				parts = append(parts, fmt.Sprintf("use(%s,%s)=%s", aws.ToString(b.Value.ToolUseId), aws.ToString(b.Value.Name), docJSON(t, b.Value.Input)))
			case *types.ContentBlockMemberToolResult:
				s := fmt.Sprintf("result(%s", aws.ToString(b.Value.ToolUseId))
				if b.Value.Status != "" {
					s += "," + string(b.Value.Status)
				}
				for _, rc := range b.Value.Content {
					s += ")=" + rc.(*types.ToolResultContentBlockMemberText).Value
				}
				parts = append(parts, s)
			default:
				t.Fatalf("unexpected block %T", c)
			}
		}
		out = append(out, string(m.Role)+": "+strings.Join(parts, " | "))
	}
	return out
}

func docJSON(t *testing.T, d document.Interface) string {
	b, err := d.MarshalSmithyDocument()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMessages(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []contracts.Node
		want  []string
	}{
		{"plain", []contracts.Node{node(contracts.RoleUser, text("hi"))}, []string{"user: text=hi"}},
		{"tool round trip", []contracts.Node{
			node(contracts.RoleUser, text("go")),
			node(contracts.RoleAssistant, text("sure"), use("t1", "write_file", `{"path":"a"}`), use("t2", "glob", "")),
			node(contracts.RoleTool, result("t1", "wrote", false), result("t2", "no such dir", true)),
			node(contracts.RoleAssistant, text("done")),
		}, []string{
			"user: text=go",
			`assistant: text=sure | use(t1,write_file)={"path":"a"} | use(t2,glob)={}`,
			"user: result(t1)=wrote | result(t2,error)=no such dir",
			"assistant: text=done",
		}},
		{"consecutive same roles merge", []contracts.Node{
			node(contracts.RoleUser, text("first")),
			node(contracts.RoleUser, text("second")),
			node(contracts.RoleAssistant, use("t1", "bash", `{"cmd":"ls"}`)),
			node(contracts.RoleTool, result("t1", "", false)),
			node(contracts.RoleUser, text("and now?")),
		}, []string{
			"user: text=first | text=second",
			`assistant: use(t1,bash)={"cmd":"ls"}`,
			"user: result(t1)=" + emptyResult + " | text=and now?",
		}},
		{"empty nodes and blank text dropped", []contracts.Node{
			node(contracts.RoleUser, text("q1")),
			node(contracts.RoleAssistant, text("")),
			node(contracts.RoleUser, text("q2")),
		}, []string{"user: text=q1 | text=q2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := messages(tc.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(t, msgs); !slices.Equal(got, tc.want) {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestBuildInput(t *testing.T) {
	req := contracts.ModelRequest{
		Model: "us.anthropic.claude-x", System: "be brief", Messages: []contracts.Node{node(contracts.RoleUser, text("hi"))},
		Tools: []contracts.ToolSpec{{Name: "grep", Description: "search", InputSchema: json.RawMessage(`{"type":"object","properties":{"max":{"type":"integer","maximum":9007199254740993}}}`)}},
	}
	in, err := buildInput(req, 100)
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(in.ModelId) != req.Model || aws.ToInt32(in.InferenceConfig.MaxTokens) != 100 {
		t.Fatalf("model %q maxTokens %d", aws.ToString(in.ModelId), aws.ToInt32(in.InferenceConfig.MaxTokens))
	}
	if len(in.System) != 1 || in.System[0].(*types.SystemContentBlockMemberText).Value != "be brief" {
		t.Fatalf("system %+v", in.System)
	}
	spec := in.ToolConfig.Tools[0].(*types.ToolMemberToolSpec).Value
	schema := docJSON(t, spec.InputSchema.(*types.ToolInputSchemaMemberJson).Value)
	if aws.ToString(spec.Name) != "grep" || aws.ToString(spec.Description) != "search" || !strings.Contains(schema, `"maximum":9007199254740993`) {
		t.Fatalf("tool spec %s %s: numbers must stay exact", aws.ToString(spec.Name), schema)
	}
	req.MaxTokens, req.Tools, req.System = 7, nil, ""
	if in, err = buildInput(req, 100); err != nil || aws.ToInt32(in.InferenceConfig.MaxTokens) != 7 || in.ToolConfig != nil || in.System != nil {
		t.Fatalf("err %v input %+v: the request's max tokens win; no tools → no toolConfig", err, in)
	}
	req.Messages = []contracts.Node{node(contracts.RoleAssistant, use("t", "x", "{not json"))}
	if _, err := buildInput(req, 100); err == nil {
		t.Fatal("a tool call with broken input must not be sent")
	}
}

func TestClassify(t *testing.T) {
	resp := func(status int, h http.Header) *smithyhttp.ResponseError {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: h}}, Err: errors.New("x")}
	}
	for _, tc := range []struct {
		name string
		err  error
		want retry.Failure
	}{
		{"throttled with Retry-After", &smithy.OperationError{Err: resp(429, http.Header{"Retry-After": {"3"}})}, retry.Failure{Retryable: true, RetryAfter: 3 * time.Second}},
		{"502 without a code", resp(502, nil), retry.Failure{Retryable: true}},
		{"validation exception", fmt.Errorf("w: %w", &types.ValidationException{Message: aws.String("m")}), retry.Failure{Permanent: true}},
		{"stream exception by wire name", &smithy.GenericAPIError{Code: "serviceUnavailableException"}, retry.Failure{Retryable: true}},
		{"unknown server fault", &smithy.GenericAPIError{Code: "Weird", Fault: smithy.FaultServer}, retry.Failure{Retryable: true}},
		{"unknown code", &smithy.GenericAPIError{Code: "Weird"}, retry.Failure{}},
		{"send failed", &smithyhttp.RequestSendError{Err: errors.New("dial tcp: refused")}, retry.Failure{Retryable: true}},
		{"incomplete stream", fmt.Errorf("x: %w", errIncomplete), retry.Failure{Retryable: true}},
		{"anything else", errors.New("boom"), retry.Failure{}},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
