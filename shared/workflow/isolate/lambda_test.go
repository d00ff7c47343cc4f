package isolate

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// TestLambdaHandler runs the handler in a process of its own (it lowers
// that process's limits): it empties the environment the function was
// given and stops an evaluation before the invocation's deadline. Where
// the deadline is not under test it is hangGuard, so a saturated machine
// cannot reach it first; the short one (1500ms) holds either way: the loop
// only ends at the deadline.
func TestLambdaHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		deadline string
		req      contracts.EvalRequest
		status   string
		has      string
	}{
		{"evaluates", hangGuard.String(), contracts.EvalRequest{Script: "result = now()\n"}, contracts.EvalDone, `"0001-01-01T00:00:00Z"`},
		{"stops before the deadline", "1500ms", contracts.EvalRequest{Script: "for x in range(2147483647):\n    pass\nresult = 1\n", MaxSteps: 1 << 62},
			contracts.EvalFailed, "evaluation cancelled: wall-clock limit: the isolate function's timeout is near"},
		{"memory guard", hangGuard.String(), contracts.EvalRequest{Script: "x = []\nfor i in range(100000000):\n    x.append('y' * 1000 + str(i))\nresult = 1\n", MaxSteps: 1 << 62},
			contracts.EvalFailed, "memory limit exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, _ := json.Marshal(tt.req)
			argv := testIsolate("lambda", tt.deadline)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = []string{"AWS_SECRET_ACCESS_KEY=not-for-scripts", "AWS_LAMBDA_RUNTIME_API=127.0.0.1:9001"}
			cmd.Stdin = bytes.NewReader(body)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("handler: %v", err)
			}
			var resp contracts.EvalResponse
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatalf("handler output %q: %v", out, err)
			}
			if resp.Status != tt.status || !strings.Contains(resp.Error+string(resp.Value), tt.has) {
				t.Fatalf("got %s %q %s, want %s with %q", resp.Status, resp.Error, resp.Value, tt.status, tt.has)
			}
		})
	}
}
