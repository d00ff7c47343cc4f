package lambdainvoke

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

// fakeLambda plays the Lambda service for one function: it checks the
// call, then answers with the function's payload, or a function error the
// way Lambda reports one (FunctionError set, the error as the payload).
type fakeLambda struct {
	function string
	answer   func(payload []byte) (out []byte, functionError string, err error)
	calls    int
}

func (f *fakeLambda) Invoke(ctx context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	f.calls++
	if aws.ToString(in.FunctionName) != f.function || in.InvocationType != types.InvocationTypeRequestResponse {
		return nil, errors.New("ResourceNotFoundException: function not found")
	}
	out, fe, err := f.answer(in.Payload)
	if err != nil {
		return nil, err
	}
	o := &lambda.InvokeOutput{StatusCode: 200, Payload: out}
	if fe != "" {
		o.FunctionError = aws.String(fe)
	}
	return o, nil
}

// inProcess is the function's handler logic without its process limits.
func inProcess(payload []byte) ([]byte, string, error) {
	var req contracts.EvalRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, "", err
	}
	out, err := json.Marshal(script.Evaluate(context.Background(), req))
	return out, "", err
}

func lambdaError(kind, msg string) func([]byte) ([]byte, string, error) {
	return func([]byte) ([]byte, string, error) {
		out, _ := json.Marshal(map[string]string{"errorType": kind, "errorMessage": msg})
		return out, "Unhandled", nil
	}
}

func TestEvaluator(t *testing.T) {
	req := contracts.EvalRequest{Script: "result = agent('hi').output\n", RunID: "run_l"}
	tests := []struct {
		name    string
		req     contracts.EvalRequest
		answer  func([]byte) ([]byte, string, error)
		status  string
		reason  string
		wantErr bool
	}{
		{"pending", req, inProcess, contracts.EvalPending, "", false},
		{"script failure", contracts.EvalRequest{Script: "fail('no')\nresult = 1\n"}, inProcess, contracts.EvalFailed, "fail: no", false},
		{"timeout", req, lambdaError("Sandbox.Timedout", "Task timed out after 10.00 seconds"), contracts.EvalFailed, "isolate timed out (wall clock): Task timed out after 10.00 seconds", false},
		{"out of memory", req, lambdaError("Runtime.OutOfMemory", "Runtime exited with error: signal: killed"), contracts.EvalFailed, "isolate ran out of memory or was killed", false},
		{"crash", req, lambdaError("Runtime.ExitError", "Runtime exited with error: exit status 2"), contracts.EvalFailed, "isolate function failed (Unhandled): Runtime.ExitError: Runtime exited with error: exit status 2", false},
		{"unparsable payload", req, func([]byte) ([]byte, string, error) { return []byte("<html>"), "", nil }, contracts.EvalFailed, "isolate output unparsable", false},
		{"unknown status", req, func([]byte) ([]byte, string, error) { return []byte(`{"status":"maybe"}`), "", nil }, contracts.EvalFailed, `unknown status "maybe"`, false},
		{"throttled: retry, not the run's failure", req, func([]byte) ([]byte, string, error) {
			return nil, "", errors.New("TooManyRequestsException: Rate exceeded")
		}, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Evaluator{Client: &fakeLambda{function: "cairn-isolate", answer: tt.answer}, Function: "cairn-isolate"}
			resp, err := e.Evaluate(context.Background(), tt.req)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error; got %+v", resp)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tt.status || !strings.Contains(resp.Error, tt.reason) {
				t.Fatalf("got %s %q, want %s %q", resp.Status, resp.Error, tt.status, tt.reason)
			}
		})
	}
	t.Run("request too large is the run's failure, never sent", func(t *testing.T) {
		fake := &fakeLambda{function: "f", answer: inProcess}
		e := &Evaluator{Client: fake, Function: "f"}
		big := contracts.EvalRequest{Script: "result = 1\n", Input: json.RawMessage(`"` + strings.Repeat("x", maxPayload) + `"`)}
		resp, err := e.Evaluate(context.Background(), big)
		if err != nil || resp.Status != contracts.EvalFailed || fake.calls != 0 {
			t.Fatalf("got %+v, %v after %d calls", resp, err, fake.calls)
		}
	})
}
