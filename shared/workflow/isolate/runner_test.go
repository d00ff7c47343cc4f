package isolate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

const fanOut = `
def main(input):
    parts = map(lambda p: start("part " + p), input["parts"])
    return agent("join " + ",".join([r.output for r in parts])).output
`

// TestRoundTrip: the subprocess answers exactly what the in-process
// evaluation does, for each step of a run.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	r := &Runner{Command: testIsolate()}
	req := contracts.EvalRequest{Script: fanOut, RunID: "run_rt", Input: json.RawMessage(`{"parts": ["a", "b", "c"]}`),
		Now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), Results: map[string]contracts.NodeResult{}}
	for i := 0; ; i++ {
		got, err := r.Evaluate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		want := script.Evaluate(context.Background(), req)
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Fatalf("evaluation %d:\nisolate    %s\nin process %s", i, gj, wj)
		}
		if got.Status != contracts.EvalPending {
			if got.Status != contracts.EvalDone || string(got.Value) != `"joined"` {
				t.Fatalf("final: %s", gj)
			}
			return
		}
		for _, p := range got.Pending {
			out := "x"
			if strings.HasPrefix(p.Spec.Prompt, "join") {
				out = "joined"
			}
			req.Results[p.ID] = contracts.NodeResult{OK: true, Output: out}
		}
	}
}

// TestChildEnvironmentIsEmpty: nothing of the runner's environment reaches
// the isolate.
func TestChildEnvironmentIsEmpty(t *testing.T) {
	t.Parallel()
	if len(os.Environ()) == 0 {
		t.Skip("the test itself runs without an environment")
	}
	resp := runIsolate(t, Runner{Command: testIsolate("env")}, "result = 1\n", 0)
	if resp.Status != contracts.EvalDone || string(resp.Value) != `""` {
		t.Fatalf("the isolate saw an environment: %s %s", resp.Status, resp.Value)
	}
}

func TestRunnerFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		runner Runner
		reason string
	}{
		{"unparsable output", Runner{Command: testIsolate("garbage")}, "isolate output unparsable"},
		{"oversized output", Runner{Command: testIsolate("flood"), MaxOutput: 1 << 20}, "isolate output exceeded 1048576 bytes"},
		{"non-zero exit", Runner{Command: testIsolate("exit3")}, "isolate exited with status 3: something broke"},
		{"unknown mode", Runner{Command: testIsolate("nope")}, "isolate exited with status 2: unknown mode nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantFailed(t, runIsolate(t, tt.runner, "result = 1\n", 0), tt.reason)
		})
	}
}

// TestWallClockKill: a hanging isolate is killed at the timeout, with the
// process it started in its group.
func TestWallClockKill(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	resp := runIsolate(t, Runner{Command: testIsolate("hang", pidFile), Timeout: 2 * time.Second}, "result = 1\n", 0)
	wantFailed(t, resp, "isolate timed out after 2s (wall clock)")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the hanging isolate never started its child: %v", err)
	}
	pid, _ := strconv.Atoi(string(raw))
	if alive(pid) {
		t.Errorf("the isolate's child %d survived the kill", pid)
	}
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func TestRunnerErrors(t *testing.T) {
	t.Parallel()
	t.Run("cannot start", func(t *testing.T) {
		r := &Runner{Command: []string{filepath.Join(binDir, "missing")}}
		if _, err := r.Evaluate(context.Background(), contracts.EvalRequest{Script: "result = 1\n"}); err == nil {
			t.Fatal("no error for a missing isolate")
		}
	})
	t.Run("no command", func(t *testing.T) {
		if _, err := (&Runner{}).Evaluate(context.Background(), contracts.EvalRequest{}); err == nil {
			t.Fatal("no error without a command")
		}
	})
	t.Run("caller's context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		r := &Runner{Command: testIsolate("hang", filepath.Join(t.TempDir(), "pid"))}
		_, err := r.Evaluate(ctx, contracts.EvalRequest{Script: "result = 1\n"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the caller's deadline (a retry, not the run's failure)", err)
		}
	})
	t.Run("request too large", func(t *testing.T) {
		big := json.RawMessage(`"` + strings.Repeat("x", MaxRequestBytes) + `"`)
		resp, err := (&Runner{Command: testIsolate()}).Evaluate(context.Background(), contracts.EvalRequest{Script: "result = 1\n", Input: big})
		if err != nil {
			t.Fatal(err)
		}
		wantFailed(t, resp, "evaluation request too large")
	})
}

func TestRequestIsAnEvalRequest(t *testing.T) {
	raw, _ := json.Marshal(Request{EvalRequest: contracts.EvalRequest{Script: "s", RunID: "r"}, Limits: Limits{MemoryMiB: 64}})
	if string(raw) != `{"script":"s","run_id":"r","now":"0001-01-01T00:00:00Z","limits":{"memory_mib":64}}` {
		t.Fatalf("request %s", raw)
	}
	var plain contracts.EvalRequest
	if err := json.Unmarshal(raw, &plain); err != nil || plain.Script != "s" {
		t.Fatalf("not readable as an EvalRequest: %v %+v", err, plain)
	}
}
