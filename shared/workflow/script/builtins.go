package script

import (
	"errors"
	"fmt"
	"time"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// errPending stops an evaluation at a blocking call whose result is not
// known yet. Starlark has no exceptions, so the script cannot catch it.
var errPending = errors.New("waiting for node results")

const (
	// MaxNodes bounds the agent/start calls of one run.
	MaxNodes     = 10_000
	maxKeyLen    = 256
	maxConfigLen = 64 << 10
)

// evaluation is the state of one run of a script: the nodes it started,
// in call order, and the explicit keys it used.
type evaluation struct {
	runID   string
	now     time.Time
	results map[string]contracts.NodeResult
	nodes   []*node
	keys    map[string]string // key → position of its first use
}

func (ev *evaluation) predeclared(input starlark.Value) starlark.StringDict {
	return starlark.StringDict{
		"agent":        starlark.NewBuiltin("agent", ev.agent),
		"start":        starlark.NewBuiltin("start", ev.start),
		"wait":         starlark.NewBuiltin("wait", ev.wait),
		"map":          starlark.NewBuiltin("map", ev.parallelMap),
		"parallel_map": starlark.NewBuiltin("parallel_map", ev.parallelMap),
		"now":          starlark.NewBuiltin("now", ev.nowFn),
		"input":        input,
		"json":         starjson.Module,
	}
}

// pending is every node started and not resolved, in seq order.
func (ev *evaluation) pending() []contracts.PendingNode {
	var out []contracts.PendingNode
	for _, n := range ev.nodes {
		if n.result == nil {
			out = append(out, contracts.PendingNode{ID: n.id, Seq: n.seq, Key: n.key, Spec: n.spec})
		}
	}
	return out
}

// start(prompt, model=None, system=None, tools=None, key=None,
// max_steps=None) starts a node and returns its handle; it never blocks.
func (ev *evaluation) start(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	n, err := ev.startNode(thread, b.Name(), args, kwargs)
	if err != nil {
		return nil, err
	}
	return Handle{n}, nil
}

// agent(...) is start(...) then wait(): its result, or the evaluation
// stops here until the node has finished.
func (ev *evaluation) agent(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	n, err := ev.startNode(thread, b.Name(), args, kwargs)
	if err != nil {
		return nil, err
	}
	if n.result == nil {
		return nil, errPending
	}
	return Result{node: n.id, res: *n.result}, nil
}

// wait(handles) takes a handle or a list/tuple of handles and returns the
// result or the list of results; any unresolved handle stops the
// evaluation (reporting every started, unresolved node).
func (ev *evaluation) wait(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &x); err != nil {
		return nil, err
	}
	if h, ok := x.(Handle); ok {
		if h.n.result == nil {
			return nil, errPending
		}
		return Result{node: h.n.id, res: *h.n.result}, nil
	}
	seq, ok := x.(starlark.Indexable)
	if !ok || !isSequence(x) {
		return nil, fmt.Errorf("wait: got %s, want a handle or a list of handles", x.Type())
	}
	out := make([]starlark.Value, seq.Len())
	blocked := false
	for i := range out {
		h, ok := seq.Index(i).(Handle)
		if !ok {
			return nil, fmt.Errorf("wait: element %d is a %s, not a handle", i, seq.Index(i).Type())
		}
		if h.n.result == nil {
			blocked = true
			continue
		}
		out[i] = Result{node: h.n.id, res: *h.n.result}
	}
	if blocked {
		return nil, errPending
	}
	return starlark.NewList(out), nil
}

// map(fn, items) calls fn(item) for each item in order, then waits for
// every handle fn returned; it returns the list of results, other values
// passing through. fn should use start(): an agent() inside it blocks the
// evaluation before later items have started.
func (ev *evaluation) parallelMap(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var fn starlark.Callable
	var items starlark.Iterable
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "fn", &fn, "items", &items); err != nil {
		return nil, err
	}
	var out []starlark.Value
	iter := items.Iterate()
	defer iter.Done()
	var item starlark.Value
	for iter.Next(&item) {
		v, err := starlark.Call(thread, fn, starlark.Tuple{item}, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	blocked := false
	for i, v := range out {
		if h, ok := v.(Handle); ok {
			if h.n.result == nil {
				blocked = true
				continue
			}
			out[i] = Result{node: h.n.id, res: *h.n.result}
		}
	}
	if blocked {
		return nil, errPending
	}
	return starlark.NewList(out), nil
}

// now() is the run's fixed time (EvalRequest.Now) as an RFC 3339 string in
// UTC, to the second: every evaluation of a run sees the same value.
func (ev *evaluation) nowFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0); err != nil {
		return nil, err
	}
	return starlark.String(ev.now.UTC().Format(time.RFC3339)), nil
}

// startNode parses a node call's arguments, gives the node its identity
// (seq counts every agent/start call; an explicit key replaces the
// position in the id) and attaches its result when known.
func (ev *evaluation) startNode(thread *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (*node, error) {
	var (
		prompt                              string
		model, system, tools, key, maxSteps starlark.Value = starlark.None, starlark.None, starlark.None, starlark.None, starlark.None
	)
	if err := starlark.UnpackArgs(fn, args, kwargs,
		"prompt", &prompt, "model?", &model, "system?", &system, "tools?", &tools,
		"key?", &key, "max_steps?", &maxSteps); err != nil {
		return nil, err
	}
	if prompt == "" {
		return nil, fmt.Errorf("%s: prompt is empty", fn)
	}
	spec := contracts.NodeSpec{Prompt: prompt}
	var err error
	if spec.Model, err = optString(fn, "model", model); err != nil {
		return nil, err
	}
	if spec.System, err = optString(fn, "system", system); err != nil {
		return nil, err
	}
	if spec.Tools, err = toolList(fn, tools); err != nil {
		return nil, err
	}
	if maxSteps != starlark.None {
		n, err := starlark.AsInt32(maxSteps)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: max_steps must be a positive int, not %s", fn, maxSteps)
		}
		spec.Limits.MaxSteps = n
	}
	k, err := optString(fn, "key", key)
	if err != nil {
		return nil, err
	}
	if key != starlark.None && (k == "" || len(k) > maxKeyLen) {
		return nil, fmt.Errorf("%s: key must be 1 to %d bytes", fn, maxKeyLen)
	}
	at := thread.CallFrame(1).Pos.String()
	if k != "" {
		if first, dup := ev.keys[k]; dup {
			return nil, fmt.Errorf("%s: duplicate node key %q (first used at %s)", fn, k, first)
		}
		ev.keys[k] = at
	}
	if len(ev.nodes) >= MaxNodes {
		return nil, fmt.Errorf("%s: more than %d nodes in one run", fn, MaxNodes)
	}
	seq := len(ev.nodes)
	n := &node{id: ids.WorkflowNode(ev.runID, seq, k), seq: seq, key: k, spec: spec}
	if r, ok := ev.results[n.id]; ok {
		n.result = &r
	}
	ev.nodes = append(ev.nodes, n)
	return n, nil
}

func optString(fn, name string, v starlark.Value) (string, error) {
	if v == starlark.None {
		return "", nil
	}
	s, ok := starlark.AsString(v)
	if !ok {
		return "", fmt.Errorf("%s: %s must be a string or None, not %s", fn, name, v.Type())
	}
	return s, nil
}

func isSequence(v starlark.Value) bool {
	switch v.(type) {
	case *starlark.List, starlark.Tuple:
		return true
	}
	return false
}

// toolList reads tools=: None (every built-in tool) or a non-empty list of
// tool names or {"name", "config", "read_only"} dicts. An empty list is
// refused: NodeSpec.Tools cannot tell it from None once encoded.
func toolList(fn string, v starlark.Value) ([]contracts.ToolConfig, error) {
	if v == starlark.None {
		return nil, nil
	}
	seq, ok := v.(starlark.Indexable)
	if !ok || !isSequence(v) {
		return nil, fmt.Errorf("%s: tools must be a list or None, not %s", fn, v.Type())
	}
	if seq.Len() == 0 {
		return nil, fmt.Errorf("%s: tools=[] is not supported (None means every built-in tool; name the tools the node needs)", fn)
	}
	out := make([]contracts.ToolConfig, seq.Len())
	for i := range out {
		switch t := seq.Index(i).(type) {
		case starlark.String:
			out[i] = contracts.ToolConfig{Name: string(t)}
		case *starlark.Dict:
			tc, err := toolDict(t)
			if err != nil {
				return nil, fmt.Errorf("%s: tools[%d]: %w", fn, i, err)
			}
			out[i] = tc
		default:
			return nil, fmt.Errorf("%s: tools[%d] is a %s, want a tool name or a dict", fn, i, t.Type())
		}
		if out[i].Name == "" {
			return nil, fmt.Errorf("%s: tools[%d] has no name", fn, i)
		}
	}
	return out, nil
}

func toolDict(d *starlark.Dict) (contracts.ToolConfig, error) {
	var tc contracts.ToolConfig
	for _, kv := range d.Items() {
		k, _ := starlark.AsString(kv[0])
		switch k {
		case "name":
			s, ok := starlark.AsString(kv[1])
			if !ok {
				return tc, fmt.Errorf("name must be a string")
			}
			tc.Name = s
		case "config":
			raw, err := encodeResult(kv[1], maxConfigLen)
			if err != nil {
				return tc, fmt.Errorf("config: %w", err)
			}
			tc.Config = raw
		case "read_only":
			b, ok := kv[1].(starlark.Bool)
			if !ok {
				return tc, fmt.Errorf("read_only must be a bool")
			}
			ro := bool(b)
			tc.ReadOnly = &ro
		default:
			return tc, fmt.Errorf("unknown field %s (want name, config, read_only)", kv[0])
		}
	}
	return tc, nil
}
