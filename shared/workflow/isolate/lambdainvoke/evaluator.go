package lambdainvoke

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/isolate"
)

// maxPayload is Lambda's limit on a synchronous request.
const maxPayload = 6 << 20

// Invoker is the part of the Lambda API a Evaluator uses
// (*lambda.Client has it).
type Invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Evaluator evaluates scripts by invoking the isolate function
// synchronously. Like Runner, the function's failures (a timeout, running
// out of memory, a crash, an unparsable payload) are EvalFailed responses
// with a nil error; an error from the Invoke call itself (throttling, a
// missing function, no network, ctx ending) is returned: retry later.
type Evaluator struct {
	Client   Invoker
	Function string // name or ARN of functions/isolate
}

var _ contracts.Evaluator = (*Evaluator)(nil)

// Evaluate invokes the function with the request as its payload.
func (e *Evaluator) Evaluate(ctx context.Context, req contracts.EvalRequest) (contracts.EvalResponse, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return contracts.EvalResponse{}, fmt.Errorf("encoding the isolate request: %w", err)
	}
	if len(payload) > maxPayload {
		return failed("evaluation request too large: %d bytes (script, input and node results) exceed Lambda's %d", len(payload), maxPayload), nil
	}
	out, err := e.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(e.Function),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        payload,
	})
	if err != nil {
		return contracts.EvalResponse{}, fmt.Errorf("invoking the isolate function %s: %w", e.Function, err)
	}
	if out.FunctionError != nil {
		return failed("%s", functionErrorReason(aws.ToString(out.FunctionError), out.Payload)), nil
	}
	if len(out.Payload) > isolate.DefaultMaxOutput {
		return failed("isolate output exceeded %d bytes", isolate.DefaultMaxOutput), nil
	}
	return isolate.DecodeResponse(out.Payload), nil
}

// functionErrorReason turns Lambda's error payload into a reason.
func functionErrorReason(kind string, payload []byte) string {
	var p struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		p.Message = truncate(string(payload), 500)
	}
	p.Message = truncate(p.Message, 1000)
	switch {
	case strings.Contains(p.Type, "Timedout") || strings.Contains(p.Message, "timed out"):
		return "isolate timed out (wall clock): " + p.Message
	case strings.Contains(p.Type, "OutOfMemory") || strings.Contains(p.Message, "out of memory") || strings.Contains(p.Message, "signal: killed"):
		return "isolate ran out of memory or was killed: " + p.Message
	}
	return fmt.Sprintf("isolate function failed (%s): %s: %s", kind, p.Type, p.Message)
}

func failed(format string, args ...any) contracts.EvalResponse {
	return contracts.EvalResponse{Status: contracts.EvalFailed, Error: fmt.Sprintf(format, args...)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
