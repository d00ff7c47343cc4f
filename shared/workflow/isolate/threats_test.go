package isolate

import (
	"strings"
	"testing"
	"time"
)

// TestThreats: hostile scripts through the real isolate process. Each ends
// as a failed evaluation with a clear reason; the test process, which
// plays the runtime, is unharmed. Only the wall-clock case sets a Timeout:
// the others get hangGuard (runIsolate), so on a saturated machine, where
// a script's CPU second takes many seconds of wall clock, the limit under
// test still comes first. The wall-clock case holds either way: its CPU
// limit (60 s) cannot be reached in 500 ms of wall clock.
func TestThreats(t *testing.T) {
	t.Parallel()
	const forever = 1 << 62 // steps: let another limit stop the script
	tests := []struct {
		name     string
		runner   Runner
		src      string
		maxSteps uint64
		reasons  []string // any one of them
	}{
		{"infinite loop: step limit", Runner{}, "for x in range(2147483647):\n    pass\nresult = 1\n", 0,
			[]string{"step limit exceeded: the script ran more than 10000000 Starlark steps"}},
		{"infinite loop: CPU limit", Runner{CPUSeconds: 1}, "for x in range(2147483647):\n    pass\nresult = 1\n", forever,
			[]string{"CPU time limit exceeded (1 s)"}},
		{"infinite loop: wall clock", Runner{Timeout: 500 * time.Millisecond, CPUSeconds: 60}, "for x in range(2147483647):\n    pass\nresult = 1\n", forever,
			[]string{"isolate timed out after 500ms (wall clock)"}},
		{"memory bomb: a growing list", Runner{MemoryMiB: 64}, "x = []\nfor i in range(100000000):\n    x.append('y' * 1000 + str(i))\nresult = len(x)\n", forever,
			[]string{"memory limit exceeded", "limit 64 MiB"}},
		{"memory bomb: one huge string", Runner{MemoryMiB: 64}, "a = 'x' * (1 << 29)\nresult = len(a + a)\n", 0,
			[]string{"memory limit exceeded (64 MiB)"}},
		{"memory bomb: repeat", Runner{}, "result = 'x' * 10000000000\n", 0,
			[]string{"repeat count 10000000000 too large"}},
		{"memory bomb: doubling", Runner{MemoryMiB: 64}, "s = 'x'\nfor i in range(40):\n    s = s + s\nresult = len(s)\n", 0,
			[]string{"memory limit exceeded"}},
		{"deep recursion", Runner{}, "def f(n):\n    return f(n + 1)\nresult = f(0)\n", 0,
			[]string{"function f called recursively"}},
		{"deeply nested data as the result", Runner{}, "x = []\nfor i in range(100000):\n    x = [x]\nresult = x\n", 0,
			[]string{"result is nested more than 1000 deep"}},
		{"deeply nested data printed", Runner{CPUSeconds: 2}, "x = []\nfor i in range(1000000):\n    x = [x]\nresult = len(str(x))\n", forever,
			[]string{"CPU time limit exceeded", "stack overflow", "memory limit exceeded"}},
		{"environment", Runner{}, "result = getenv('AWS_SECRET_ACCESS_KEY')\n", 0, []string{"undefined: getenv"}},
		{"environment via os", Runner{}, "result = os.environ['HOME']\n", 0, []string{"undefined: os"}},
		{"files", Runner{}, "result = open('/etc/passwd').read()\n", 0, []string{"undefined: open"}},
		{"files via load", Runner{}, "load('/etc/passwd', 'x')\nresult = x\n", 0, []string{"load is not allowed"}},
		{"network", Runner{}, "result = http.get('http://169.254.169.254/latest/meta-data/')\n", 0, []string{"undefined: http"}},
		{"network via socket", Runner{}, "result = socket.connect('10.0.0.1', 80)\n", 0, []string{"undefined: socket"}},
		{"huge output value", Runner{}, "result = 'x' * 2000000\n", 0, []string{"output too large"}},
		{"huge pending list", Runner{MemoryMiB: 256}, "result = wait([start('p' * 300 + str(i)) for i in range(9000)])\n", 0,
			[]string{"isolate output exceeded 2097152 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := runIsolate(t, tt.runner, tt.src, tt.maxSteps)
			wantFailed(t, resp, tt.reasons...)
			t.Logf("reason: %s", resp.Error)
			if len(resp.Error) > 5000 || strings.Contains(resp.Error, "goroutine ") {
				t.Errorf("reason is not short and clear: %q", resp.Error)
			}
		})
	}
}
