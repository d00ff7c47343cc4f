package script

import (
	"context"
	"errors"
	"fmt"

	"go.starlark.net/starlark"

	"github.com/cairnrun/cairn/shared/contracts"
)

const (
	// DefaultMaxSteps is the Starlark step limit of an evaluation when the
	// request sets none.
	DefaultMaxSteps = 10_000_000
	// MaxOutputBytes bounds the JSON of a script's result.
	MaxOutputBytes = 1 << 20
	// FileName is the script's name in positions and backtraces.
	FileName = "workflow.star"

	maxErrorBytes = 4 << 10
)

// Evaluate runs the script against the node results known so far
// (req.Results) and returns:
//
//   - EvalDone with the result as JSON: main(input) if the script defines
//     main, else the global result;
//   - EvalPending with every node started and not yet resolved, in seq
//     order, when a blocking call (agent, wait, map) met an unresolved
//     node, or when the script finished while nodes it started are still
//     running (a run ends only after all of its nodes have);
//   - EvalFailed with the reason: a script error (position, message and
//     backtrace), the step limit, cancellation of ctx, a result that is
//     not JSON or larger than MaxOutputBytes.
//
// Evaluate is pure: the same request gives the same response, byte for
// byte. It is safe for concurrent use.
func Evaluate(ctx context.Context, req contracts.EvalRequest) contracts.EvalResponse {
	prog, err := compile(FileName, req.Script)
	if err != nil {
		return failed(0, "invalid script: "+err.Error())
	}
	input, err := decodeInput(req.Input)
	if err != nil {
		return failed(0, err.Error())
	}
	maxSteps := req.MaxSteps
	if maxSteps == 0 {
		maxSteps = DefaultMaxSteps
	}
	ev := &evaluation{runID: req.RunID, now: req.Now, results: req.Results, keys: map[string]string{}}
	thread := &starlark.Thread{Name: "workflow", Print: func(*starlark.Thread, string) {}}
	thread.SetMaxExecutionSteps(maxSteps)
	stepLimit := false
	thread.OnMaxSteps = func(t *starlark.Thread) {
		stepLimit = true
		t.Cancel("step limit")
	}
	stop := context.AfterFunc(ctx, func() { thread.Cancel("cancelled") })
	defer stop()

	value, err := run(thread, prog, ev.predeclared(input), input)
	steps := thread.ExecutionSteps()
	switch {
	case errors.Is(err, errPending):
		return contracts.EvalResponse{Status: contracts.EvalPending, Pending: ev.pending(), Steps: steps}
	case stepLimit:
		return failed(steps, fmt.Sprintf("step limit exceeded: the script ran more than %d Starlark steps", maxSteps))
	case err != nil && ctx.Err() != nil:
		return failed(steps, fmt.Sprintf("evaluation cancelled: %v", context.Cause(ctx)))
	case err != nil:
		return failed(steps, scriptError(err))
	}
	if p := ev.pending(); len(p) > 0 {
		return contracts.EvalResponse{Status: contracts.EvalPending, Pending: p, Steps: steps}
	}
	raw, err := encodeResult(value, MaxOutputBytes)
	switch {
	case errors.Is(err, errTooLarge):
		return failed(steps, fmt.Sprintf("output too large: the result is more than %d bytes of JSON", MaxOutputBytes))
	case err != nil:
		return failed(steps, err.Error())
	}
	return contracts.EvalResponse{Status: contracts.EvalDone, Value: raw, Steps: steps}
}

// run executes the top level, then picks the result by the convention.
func run(thread *starlark.Thread, prog *starlark.Program, predeclared starlark.StringDict, input starlark.Value) (starlark.Value, error) {
	globals, err := prog.Init(thread, predeclared)
	if err != nil {
		return nil, err
	}
	if main, ok := globals["main"]; ok {
		return starlark.Call(thread, main, starlark.Tuple{input}, nil)
	}
	if result, ok := globals["result"]; ok {
		return result, nil
	}
	return nil, errors.New("the script finished without setting result")
}

// scriptError is "file:line:col: message" at the innermost script frame,
// then Starlark's backtrace, capped at maxErrorBytes.
func scriptError(err error) string {
	var ee *starlark.EvalError
	if !errors.As(err, &ee) {
		return truncate(err.Error())
	}
	msg := ee.Msg
	for i := len(ee.CallStack) - 1; i >= 0; i-- {
		if pos := ee.CallStack[i].Pos; pos.Filename() == FileName {
			msg = fmt.Sprintf("%s: %s", pos, ee.Msg)
			break
		}
	}
	return truncate(msg + "\n" + ee.Backtrace())
}

func truncate(s string) string {
	if len(s) <= maxErrorBytes {
		return s
	}
	return s[:maxErrorBytes] + "… (truncated)"
}

func failed(steps uint64, reason string) contracts.EvalResponse {
	return contracts.EvalResponse{Status: contracts.EvalFailed, Error: reason, Steps: steps}
}
