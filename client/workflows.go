package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

// CreateWorkflow stores a workflow script (Starlark) under name; the
// server checks its syntax and names first.
func (c *Client) CreateWorkflow(ctx context.Context, name, script string) (contracts.Workflow, error) {
	body := struct {
		Name   string `json:"name"`
		Script string `json:"script"`
	}{name, script}
	var wf contracts.Workflow
	return wf, c.call(ctx, request{route: "POST /v1/workflows", body: body}, &wf)
}

// Workflow reads a workflow.
func (c *Client) Workflow(ctx context.Context, id string) (contracts.Workflow, error) {
	var wf contracts.Workflow
	return wf, c.call(ctx, request{route: "GET /v1/workflows/{id}", args: []string{id}}, &wf)
}

// WorkflowSummary is a workflow as Workflows lists it: no script, its size.
type WorkflowSummary = contracts.WorkflowSummary

// Workflows pages the caller's workflows (an operator's: everyone's),
// newest first.
func (c *Client) Workflows(ctx context.Context, opts ListOptions) (Page[WorkflowSummary], error) {
	return list[WorkflowSummary](ctx, c, request{route: "GET /v1/workflows", query: opts.query()}, "workflows")
}

// RunOptions are a run's optional parts.
type RunOptions struct {
	// Input is the run's input, JSON (the script's input); nil = none.
	Input json.RawMessage
	// Key is the Idempotency-Key: the same key is the same run.
	Key string
}

// StartRun starts a run of a workflow.
func (c *Client) StartRun(ctx context.Context, workflowID string, opts RunOptions) (contracts.WorkflowRun, error) {
	body := struct {
		Input json.RawMessage `json:"input,omitempty"`
	}{opts.Input}
	var h http.Header
	if opts.Key != "" {
		h = http.Header{"Idempotency-Key": {opts.Key}}
	}
	var run contracts.WorkflowRun
	return run, c.call(ctx, request{route: "POST /v1/workflows/{id}/runs", args: []string{workflowID}, body: body, header: h}, &run)
}

// RunSummary is a run as lists show it: no script, input or result, its
// error cut to 200 bytes.
type RunSummary = contracts.RunSummary

// Runs pages a workflow's runs, newest first.
func (c *Client) Runs(ctx context.Context, workflowID string, opts ListOptions) (Page[RunSummary], error) {
	return list[RunSummary](ctx, c, request{route: "GET /v1/workflows/{id}/runs", args: []string{workflowID}, query: opts.query()}, "runs")
}

// NodeView is a run's node as the run lists it: its prompt and output cut
// to 200 bytes (their sizes beside), with a summary of the turn running it.
type NodeView = contracts.NodeView

// RunView is a run with the first page of its nodes (opts of Run);
// NodesNext continues with Nodes.
type RunView = contracts.RunView

// Run reads a run with the first page of its nodes (opts pages them:
// default 100).
func (c *Client) Run(ctx context.Context, workflowID, runID string, opts ListOptions) (RunView, error) {
	var v RunView
	return v, c.call(ctx, request{route: "GET /v1/workflows/{id}/runs/{rid}", args: []string{workflowID, runID}, query: opts.query()}, &v)
}

// Nodes pages a run's nodes, in the order they started.
func (c *Client) Nodes(ctx context.Context, workflowID, runID string, opts ListOptions) (Page[NodeView], error) {
	return list[NodeView](ctx, c, request{route: "GET /v1/workflows/{id}/runs/{rid}/nodes", args: []string{workflowID, runID}, query: opts.query()}, "nodes")
}

// Node reads one node of a run whole.
func (c *Client) Node(ctx context.Context, workflowID, runID, nodeID string) (contracts.WorkflowNode, error) {
	var n contracts.WorkflowNode
	return n, c.call(ctx, request{route: "GET /v1/workflows/{id}/runs/{rid}/nodes/{nid}", args: []string{workflowID, runID, nodeID}}, &n)
}

// CancelRun cancels a run and every unfinished node's turn; reason is
// recorded.
func (c *Client) CancelRun(ctx context.Context, workflowID, runID, reason string) (contracts.WorkflowRun, error) {
	body := struct {
		Reason string `json:"reason,omitempty"`
	}{reason}
	var run contracts.WorkflowRun
	return run, c.call(ctx, request{route: "POST /v1/workflows/{id}/runs/{rid}/cancel", args: []string{workflowID, runID}, body: body}, &run)
}

// CreateSchedule schedules runs of a workflow on expression ("rate(5
// minutes)", "cron(0 12 * * ? *)") with input (nil = none).
func (c *Client) CreateSchedule(ctx context.Context, workflowID, expression string, input json.RawMessage) (contracts.Schedule, error) {
	body := struct {
		Expression string          `json:"expression"`
		Input      json.RawMessage `json:"input,omitempty"`
	}{expression, input}
	var sc contracts.Schedule
	return sc, c.call(ctx, request{route: "POST /v1/workflows/{id}/schedules", args: []string{workflowID}, body: body}, &sc)
}

// ScheduleSummary is a schedule as lists show it: its input only by size.
type ScheduleSummary = contracts.ScheduleSummary

// WorkflowSchedules pages a workflow's schedules, in id order.
func (c *Client) WorkflowSchedules(ctx context.Context, workflowID string, opts ListOptions) (Page[ScheduleSummary], error) {
	return list[ScheduleSummary](ctx, c, request{route: "GET /v1/workflows/{id}/schedules", args: []string{workflowID}, query: opts.query()}, "schedules")
}

// Schedules pages the caller's schedules of every workflow (an
// operator's: everyone's), in id order.
func (c *Client) Schedules(ctx context.Context, opts ListOptions) (Page[ScheduleSummary], error) {
	return list[ScheduleSummary](ctx, c, request{route: "GET /v1/schedules", query: opts.query()}, "schedules")
}

// Schedule reads a schedule of a workflow.
func (c *Client) Schedule(ctx context.Context, workflowID, scheduleID string) (contracts.Schedule, error) {
	var sc contracts.Schedule
	return sc, c.call(ctx, request{route: "GET /v1/workflows/{id}/schedules/{sch}", args: []string{workflowID, scheduleID}}, &sc)
}

// PauseSchedule stops a schedule firing (idempotent).
func (c *Client) PauseSchedule(ctx context.Context, workflowID, scheduleID string) (contracts.Schedule, error) {
	var sc contracts.Schedule
	return sc, c.call(ctx, request{route: "POST /v1/workflows/{id}/schedules/{sch}/pause", args: []string{workflowID, scheduleID}}, &sc)
}

// ResumeSchedule makes a paused schedule fire again (idempotent).
func (c *Client) ResumeSchedule(ctx context.Context, workflowID, scheduleID string) (contracts.Schedule, error) {
	var sc contracts.Schedule
	return sc, c.call(ctx, request{route: "POST /v1/workflows/{id}/schedules/{sch}/resume", args: []string{workflowID, scheduleID}}, &sc)
}

// DeleteSchedule deletes a schedule (one already gone is a 404 *Error).
func (c *Client) DeleteSchedule(ctx context.Context, workflowID, scheduleID string) error {
	return c.call(ctx, request{route: "DELETE /v1/workflows/{id}/schedules/{sch}", args: []string{workflowID, scheduleID}}, nil)
}
