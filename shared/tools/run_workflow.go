package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

const runWorkflowSchema = `{
	"type": "object",
	"properties": {
		"script": {"type": "string", "minLength": 1, "maxLength": 262144, "description": "A Starlark workflow script. agent(prompt, model=, system=, tools=, key=) runs a sub-agent turn and returns its result (r.ok, r.output, r.error); start(...) starts one without waiting and returns a handle; wait(handles) waits for handles; parallel_map(fn, items) calls fn on each item (fn returns start(...)) and waits for all; input is the run's input; now() the run's start time. Set result = <the workflow's value>."},
		"input": {"description": "Any JSON value, visible to the script as input."}
	},
	"required": ["script"],
	"additionalProperties": false
}`

// runWorkflowDef starts a workflow run and gives its result to the model.
// The calling turn parks (durably) until the run ends: Run returns
// ErrPending while the run is going, and the run wakes the turn when it
// ends. The run id derives from the call (submission, step, call id), so
// running the call again finds the same run: the tool is re-runnable
// (read-only as far as recovery is concerned). Opt-in.
func runWorkflowDef() contracts.ToolDef {
	return contracts.ToolDef{
		ToolSpec: contracts.ToolSpec{
			Name:        "run_workflow",
			Description: "Write a workflow script that fans out into sub-agent turns and run it; returns the workflow's result when it ends.",
			InputSchema: []byte(runWorkflowSchema),
		},
		Effect: contracts.ReadOnly,
		OptIn:  true,
		Factory: func(b contracts.Binding) (contracts.Tool, error) {
			return runWorkflowTool{b.Workflows, b.SessionID}, nil
		},
	}
}

type runWorkflowTool struct {
	wf        contracts.WorkflowStarter
	sessionID string
}

func (t runWorkflowTool) Run(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	if t.wf == nil {
		return contracts.ToolResult{Content: "run_workflow: workflows are not served by this deployment", IsError: true}, nil
	}
	var in struct {
		Script string  `json:"script"`
		Input  jsonRaw `json:"input"`
	}
	if err := decode(call.Input, &in); err != nil {
		return badInput(call, err), nil
	}
	id := ids.ToolRun(call.SubmissionID, call.Step, call.ID)
	run, err := t.wf.GetRun(ctx, id)
	if errors.Is(err, contracts.ErrNotFound) {
		run, err = t.wf.StartRun(ctx, contracts.WorkflowRun{
			ID: id, WorkflowID: "inline", Script: in.Script, Input: in.Input.raw(),
			Parent: &contracts.RunParent{SessionID: t.sessionID, SubmissionID: call.SubmissionID, Step: call.Step, CallID: call.ID},
		})
	}
	if err != nil {
		return contracts.ToolResult{}, fmt.Errorf("run_workflow: run %s: %w", id, err)
	}
	switch run.Status {
	case contracts.RunSucceeded:
		return contracts.ToolResult{Content: string(run.Result)}, nil
	case contracts.RunFailed:
		return contracts.ToolResult{Content: fmt.Sprintf("workflow run %s failed: %s", run.ID, run.Error), IsError: true}, nil
	case contracts.RunCancelled:
		return contracts.ToolResult{Content: fmt.Sprintf("workflow run %s was cancelled: %s", run.ID, run.Error), IsError: true}, nil
	}
	return contracts.ToolResult{}, fmt.Errorf("waiting for workflow run %s: %w", run.ID, contracts.ErrPending)
}
