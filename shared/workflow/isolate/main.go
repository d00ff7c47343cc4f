package isolate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

// MaxRequestBytes bounds the request an isolate reads.
const MaxRequestBytes = 8 << 20

// Request is the isolate protocol on stdin: an EvalRequest (its fields at
// the top level, so a bare EvalRequest is a valid Request) plus the limits
// the process sets for itself before evaluating.
type Request struct {
	contracts.EvalRequest
	Limits Limits `json:"limits,omitzero"`
}

// Main is the body of `cairn isolate`. First it lowers its own limits (no
// core files, no file writes, few descriptors, no new processes), then
// reads one Request (at most MaxRequestBytes) from stdin, caps its address
// space and CPU time as the request's Limits say, evaluates it with script.Evaluate and writes one
// contracts.EvalResponse as JSON to stdout. A heap guard and SIGXCPU (the
// soft CPU limit) cancel the evaluation with a clear reason; the hard
// limits kill the process if that is not enough. It returns 0 whenever it
// wrote a response, 1 otherwise (the reason on stderr).
func Main(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	if err := lockDown(maxOpenFiles); err != nil {
		fmt.Fprintf(stderr, "isolate: %v\n", err)
		return 1
	}
	resp := evaluateRequest(ctx, stdin)
	if err := json.NewEncoder(stdout).Encode(resp); err != nil {
		fmt.Fprintf(stderr, "isolate: writing the response: %v\n", err)
		return 1
	}
	return 0
}

// evaluateRequest reads the request, applies its limits and evaluates it.
func evaluateRequest(ctx context.Context, stdin io.Reader) contracts.EvalResponse {
	raw, err := io.ReadAll(io.LimitReader(stdin, MaxRequestBytes+1))
	if err != nil {
		return failed("reading the request: %v", err)
	}
	if len(raw) > MaxRequestBytes {
		return failed("request too large: more than %d bytes", MaxRequestBytes)
	}
	var req Request
	if err := json.Unmarshal(raw, &req); err != nil {
		return failed("invalid request: %v", err)
	}
	if err := applyLimits(req.Limits); err != nil {
		return failed("%v", err)
	}
	return evaluateGuarded(ctx, req.EvalRequest, req.Limits)
}

// evaluateGuarded runs script.Evaluate under the heap guard and the CPU
// signal: either cancels the evaluation with its reason.
func evaluateGuarded(ctx context.Context, req contracts.EvalRequest, l Limits) contracts.EvalResponse {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go guardHeap(ctx, cancel, l)
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, cpuSignal)
	defer signal.Stop(xcpu)
	go func() {
		select {
		case <-xcpu:
			cancel(fmt.Errorf("CPU time limit exceeded (%d s)", l.withDefaults().CPUSeconds))
		case <-ctx.Done():
		}
	}()
	return script.Evaluate(ctx, req)
}

func failed(format string, args ...any) contracts.EvalResponse {
	return contracts.EvalResponse{Status: contracts.EvalFailed, Error: fmt.Sprintf(format, args...)}
}
