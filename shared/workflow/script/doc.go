// Package script evaluates workflow scripts: deterministic Starlark run by
// replay against the node results known so far (docs/DESIGN.md §7). It is
// pure and in-process; the isolate (shared/workflow/isolate) calls it in a
// process of its own, and nothing else should: the driver never evaluates a
// script itself.
//
// It may import shared/contracts, shared/ids, the standard library and
// go.starlark.net.
//
// # The script
//
// A script returns its value one of two ways, exactly one of which it must
// use (Check enforces it): it defines main(input), whose return value is
// the result, or it sets a global named result. Top-level for/if are
// allowed; while loops, recursion (Starlark forbids it: a function that
// calls itself, directly or not, fails "called recursively") and load are
// not.
//
// Builtins (Builtins lists them; nothing else is predeclared — no file,
// environment, network or clock access):
//
//	agent(prompt, model=None, system=None, tools=None, key=None, max_steps=None)
//	    starts a node and returns its result; if the result is not known yet
//	    the evaluation stops here (pending).
//	start(...)           same arguments; returns a handle and never blocks.
//	wait(h) / wait([h…]) the result / list of results; stops the evaluation
//	                     if any is unresolved.
//	map(fn, items)       fn(item) for every item (fn typically returns
//	                     start(...)), then waits for every handle returned;
//	                     the list of results, other values passing through.
//	                     Also named parallel_map.
//	input                the run's input JSON as Starlark values (frozen;
//	                     object keys sorted); None without input.
//	now()                the run's fixed time as an RFC 3339 UTC string to
//	                     the second, e.g. "2026-05-01T12:30:15Z".
//	json.encode/decode   go.starlark.net/lib/json.
//	fail(msg)            Starlark's: the run fails with msg.
//
// tools= is None (every built-in tool) or a non-empty list of tool names
// or {"name", "config", "read_only"} dicts. A node's result has .ok (bool),
// .output, .error (strings) and .node (its id): a failed node is a value the
// script inspects, never an abort. A handle has .node and .key, and no way
// to ask whether it has finished: results reach the script only through
// agent, wait and map, so what a script does never depends on the order in
// which results arrived.
//
// # Replay and node identity
//
// Every agent/start call is a node, numbered seq 0, 1, 2, … in call order;
// its id is ids.WorkflowNode(run, seq, key), where an explicit key= (unique
// in a run) replaces the position. Evaluate re-runs the script from the top
// against req.Results; a blocking call on an unknown result ends the
// evaluation EvalPending with every node started and unresolved so far, so
// independent nodes fan out in one evaluation. The same script and results
// give the same response byte for byte. A run ends only when every node it
// started has a result: a script that returns while a started node is still
// unresolved is pending on it.
//
// # Limits
//
// A step limit (EvalRequest.MaxSteps, DefaultMaxSteps when zero),
// cancellation through ctx, at most MaxNodes nodes, a result of at most
// MaxOutputBytes of JSON nested at most 1000 deep. Memory and wall-clock
// limits belong to the process around it (shared/workflow/isolate). print() output
// is discarded.
//
// # Usage
//
//	if err := script.Check("summarise.star", src); err != nil {
//		return err // wraps contracts.ErrInvalid; one "name:line:col: message" line per problem
//	}
//	resp := script.Evaluate(ctx, contracts.EvalRequest{
//		Script: src, Input: input, RunID: run.ID, Now: run.StartedAt, Results: known,
//	})
//	switch resp.Status {
//	case contracts.EvalPending: // create resp.Pending's child submissions
//	case contracts.EvalDone:    // resp.Value is the run's result
//	case contracts.EvalFailed:  // resp.Error says where and why
//	}
package script
