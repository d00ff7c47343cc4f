package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/workflow/isolate"
)

// BenchmarkFanOut1000 is the wall time of a 1,000-node fan-out on the
// embedded backend with the scripted model, every evaluation in a real
// isolate process (make bench: -benchtime 1x).
func BenchmarkFanOut1000(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "isolate")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/cairnrun/cairn/shared/workflow/isolate/internal/testisolate").CombinedOutput(); err != nil {
		b.Fatalf("building the isolate: %v\n%s", err, out)
	}
	in, _ := json.Marshal(map[string]int{"n": 1000})
	for i := 0; b.Loop(); i++ {
		var store contracts.WorkflowStore
		h := enginetest.New(b, func(p *assemble.Ports) {
			store = p.Journal.(*sqlite.Store).Workflows()
			p.Workflows, p.Evaluator = store, &isolate.Runner{Command: []string{bin}, Timeout: time.Minute}
		})
		ctx := context.Background()
		run, err := h.RT.Driver.Start(ctx, contracts.WorkflowRun{ID: fmt.Sprint("run_bench_", i), WorkflowID: "wf_bench", Script: fanOut, Input: in})
		if err != nil {
			b.Fatal(err)
		}
		h.Drain()
		got, err := store.GetRun(ctx, run.ID)
		if err != nil || got.Status != contracts.RunSucceeded || !strings.Contains(string(got.Result), `"ok":1000`) {
			b.Fatalf("run %+v, %v", got, err)
		}
		b.ReportMetric(float64(got.Evaluations), "evaluations")
	}
}
