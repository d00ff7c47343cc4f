package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make bench's summary table (scripts/bench-summary.sh) holds every figure
// its benchmarks report — a benchmark that prints while it runs
// (CostPerAgentStep's report) too: its name and its figures are then on
// separate lines of the log.
func TestBenchSummaryHoldsEveryFigure(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "bench.log")
	if err := os.WriteFile(log, []byte(`goos: linux
BenchmarkAgentStepInSession-2   	    1000	    917451 ns/op	         2.999 commits/turn	         0.6540 p50-ms/turn	   93192 B/op	    1307 allocs/op
BenchmarkCostPerAgentStep/answer=4KB-2          	--- answer=4KB: 5 turns (10 agent steps), model scripted:bench-4096-80-2048@60ms
call                                calls/st     WU/st     RU/st   $/M steps
TOTAL cairn orchestration $/M           29.462
      20	 870259764 ns/op	        29.46 $/M-steps	        13.70 RU/step	        38.80 WU/step
BenchmarkFanOut1000-2   	       1	2334252471 ns/op	       101.0 evaluations
PASS
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "../scripts/bench-summary.sh", log)
	cmd.Env = append(os.Environ(), "PEERS=none")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench-summary.sh: %v\n%s", err, out)
	}
	table := string(out)
	for _, want := range [][]string{
		{"BenchmarkAgentStepInSession", "0.6540", "p50-ms/turn"},
		{"BenchmarkCostPerAgentStep/answer=4KB", "29.46", "$/M-steps"},
		{"BenchmarkCostPerAgentStep/answer=4KB", "38.80", "WU/step"},
		{"BenchmarkFanOut1000", "101.0", "evaluations"},
	} {
		found := false
		for _, line := range strings.Split(table, "\n") {
			if strings.Contains(line, want[0]+" ") && strings.Contains(line, " "+want[1]+" ") && strings.Contains(line, " "+want[2]+" ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no row %v in the summary:\n%s", want, table)
		}
	}
	if strings.Contains(table, "answer=4KB: ") || strings.Contains(table, "allocs/op") {
		t.Errorf("a row that is not a figure:\n%s", table)
	}
}
