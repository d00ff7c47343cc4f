package isolate

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

const (
	// lambdaMargin: an evaluation stops this long before the function's
	// deadline, so it reports the wall-clock limit instead of being cut off.
	lambdaMargin = 500 * time.Millisecond
	// lambdaOpenFiles leaves room for the connection to the Runtime API.
	lambdaOpenFiles = 64
)

// LambdaHandler is the isolate as a Lambda (functions/isolate): the same
// evaluation as Main, behind lambda.Start(h.Handle). On its first
// invocation it lowers the process's limits (no core files, bounded file
// writes, few descriptors, no new processes) and, with ClearEnv, empties
// the environment (the Lambda runtime has read its API address by then;
// the role's credentials are gone from the process, and the role allows
// nothing anyway). Memory and CPU are per invocation, not per process, in a
// warm Lambda: Limits.MemoryMiB (the function's memory size) sets Go's
// memory limit and the heap guard, and each evaluation stops shortly
// before the invocation's deadline; RLIMIT_CPU, which would count every
// invocation of the process, is not used.
type LambdaHandler struct {
	Limits   Limits
	ClearEnv bool

	once sync.Once
	err  error
}

// Handle evaluates one request. A failed evaluation is a response; the
// error is non-nil only if the process could not lower its limits.
func (h *LambdaHandler) Handle(ctx context.Context, req contracts.EvalRequest) (contracts.EvalResponse, error) {
	h.once.Do(func() {
		if h.ClearEnv {
			os.Clearenv()
		}
		if h.err = lockDown(lambdaOpenFiles); h.err == nil {
			debug.SetMemoryLimit(int64(h.Limits.memoryBytes()) * 3 / 4)
		}
	})
	if h.err != nil {
		return contracts.EvalResponse{}, fmt.Errorf("isolate function: %w", h.err)
	}
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, dl.Add(-lambdaMargin),
			fmt.Errorf("wall-clock limit: the isolate function's timeout is near"))
		defer cancel()
	}
	return evaluateGuarded(ctx, req, h.Limits), nil
}
