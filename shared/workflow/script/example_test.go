package script_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

func ExampleEvaluate() {
	src := `
def main(input):
    drafts = map(lambda topic: start("Write a paragraph about " + topic), input["topics"])
    good = [d.output for d in drafts if d.ok]
    return agent("Merge these paragraphs:\n" + "\n".join(good)).output
`
	req := contracts.EvalRequest{Script: src, RunID: "run_1", Input: json.RawMessage(`{"topics": ["tides", "comets"]}`)}

	// First evaluation: both drafts fan out at once.
	resp := script.Evaluate(context.Background(), req)
	fmt.Println(resp.Status, len(resp.Pending))

	// The drafts finished (one failed): now the merge is pending.
	req.Results = map[string]contracts.NodeResult{
		resp.Pending[0].ID: {OK: true, Output: "Tides rise."},
		resp.Pending[1].ID: {OK: false, Error: "model refused"},
	}
	resp = script.Evaluate(context.Background(), req)
	fmt.Println(resp.Status, resp.Pending[0].Seq, resp.Pending[0].Spec.Prompt)

	// The merge finished: the run's result.
	req.Results[resp.Pending[0].ID] = contracts.NodeResult{OK: true, Output: "Tides rise; comets fall."}
	resp = script.Evaluate(context.Background(), req)
	fmt.Println(resp.Status, string(resp.Value))
	// Output:
	// pending 2
	// pending 2 Merge these paragraphs:
	// Tides rise.
	// done "Tides rise; comets fall."
}

func ExampleCheck() {
	err := script.Check("report.star", "r = agent('hi')\nresult = r.outptu + undefined_name\n")
	fmt.Println(err)
	// Output:
	// report.star:2:21: undefined: undefined_name
}
