package script_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

const runID = "run_test"

func id(seq int) string     { return ids.WorkflowNode(runID, seq, "") }
func keyed(k string) string { return ids.WorkflowNode(runID, 0, k) }

func ok(out string) contracts.NodeResult { return contracts.NodeResult{OK: true, Output: out} }

type results = map[string]contracts.NodeResult

func evaluate(t testing.TB, src, input string, res results) contracts.EvalResponse {
	t.Helper()
	req := contracts.EvalRequest{Script: src, RunID: runID, Results: res,
		Now: time.Date(2026, 5, 1, 12, 30, 15, 999, time.UTC)}
	if input != "" {
		req.Input = json.RawMessage(input)
	}
	return script.Evaluate(context.Background(), req)
}

func pendingIDs(r contracts.EvalResponse) []string {
	var out []string
	for _, p := range r.Pending {
		out = append(out, p.ID)
	}
	return out
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		input   string
		results results
		status  string
		value   string   // done: the JSON value
		pending []string // pending: node ids in order
		errHas  []string // failed: substrings of the reason
	}{
		// agent: blocking.
		{name: "agent blocks on an unknown result", src: "r = agent('a')\nresult = r.output\n",
			status: contracts.EvalPending, pending: []string{id(0)}},
		{name: "agent returns a known result", src: "r = agent('a')\nresult = [r.ok, r.output, r.error, r.node == '" + id(0) + "']\n",
			results: results{id(0): ok("A")}, status: contracts.EvalDone, value: `[true,"A","",true]`},
		{name: "agents in sequence: one at a time", src: "a = agent('a')\nb = agent('b: ' + a.output)\nresult = b.output\n",
			results: results{id(0): ok("A")}, status: contracts.EvalPending, pending: []string{id(1)}},
		// start + wait: fan-out in one evaluation.
		{name: "start never blocks; wait reports every unresolved node", src: "hs = [start(p) for p in ['a', 'b', 'c']]\nresult = [r.output for r in wait(hs)]\n",
			status: contracts.EvalPending, pending: []string{id(0), id(1), id(2)}},
		{name: "wait with some results reports only the rest", src: "hs = [start(p) for p in ['a', 'b', 'c']]\nresult = [r.output for r in wait(hs)]\n",
			results: results{id(1): ok("B")}, status: contracts.EvalPending, pending: []string{id(0), id(2)}},
		{name: "wait on a list returns the results in order", src: "hs = [start(p) for p in ['a', 'b']]\nresult = [r.output for r in wait(hs)]\n",
			results: results{id(0): ok("A"), id(1): ok("B")}, status: contracts.EvalDone, value: `["A","B"]`},
		{name: "wait on one handle returns one result", src: "h = start('a')\nresult = wait(h).output\n",
			results: results{id(0): ok("A")}, status: contracts.EvalDone, value: `"A"`},
		{name: "wait on a tuple", src: "result = len(wait((start('a'), start('b'))))\n",
			results: results{id(0): ok("A"), id(1): ok("B")}, status: contracts.EvalDone, value: `2`},
		{name: "wait on nothing", src: "result = wait([])\n", status: contracts.EvalDone, value: `[]`},
		{name: "wait on a non-handle", src: "result = wait([1])\n", status: contracts.EvalFailed, errHas: []string{"wait: element 0 is a int, not a handle"}},
		{name: "handle attributes", src: "h = start('a', key='k')\nresult = [h.node == '" + keyed("k") + "', h.key, start('b').key, wait(h).ok]\n",
			results: results{keyed("k"): ok(""), id(1): ok("")}, status: contracts.EvalDone, value: `[true,"k",null,true]`},
		{name: "no way to ask whether a handle is done (replay would diverge)", src: "h = start('a')\nresult = h.done\n",
			status: contracts.EvalFailed, errHas: []string{"handle has no .done field or method"}},
		{name: "nodes started before a blocking agent fan out with it", src: "h = start('a')\nb = agent('b')\nresult = [wait(h).output, b.output]\n",
			status: contracts.EvalPending, pending: []string{id(0), id(1)}},
		{name: "a started node never waited for still runs before the run ends", src: "start('side effect')\nresult = 'done'\n",
			status: contracts.EvalPending, pending: []string{id(0)}},
		{name: "… and the run ends once it has", src: "start('side effect')\nresult = 'done'\n",
			results: results{id(0): ok("x")}, status: contracts.EvalDone, value: `"done"`},
		// map.
		{name: "map starts every item, then waits", src: "result = [r.output for r in map(lambda d: start('sum ' + d), input)]\n", input: `["a","b","c"]`,
			status: contracts.EvalPending, pending: []string{id(0), id(1), id(2)}},
		{name: "map returns the results in item order", src: "result = [r.output for r in map(lambda d: start('sum ' + d), input)]\n", input: `["a","b"]`,
			results: results{id(1): ok("B"), id(0): ok("A")}, status: contracts.EvalDone, value: `["A","B"]`},
		{name: "parallel_map is map", src: "result = [r.output for r in parallel_map(lambda d: start(d), ['a', 'b'])]\n",
			results: results{id(0): ok("A"), id(1): ok("B")}, status: contracts.EvalDone, value: `["A","B"]`},
		{name: "map passes non-handles through", src: "result = map(lambda x: x * 2, [1, 2])\n", status: contracts.EvalDone, value: `[2,4]`},
		{name: "map over a def with a condition", src: "def f(x):\n    if x > 1:\n        return start(str(x))\n    return 'small'\nresult = [getattr(r, 'output', r) for r in map(f, [1, 2])]\n",
			results: results{id(0): ok("two")}, status: contracts.EvalDone, value: `["small","two"]`},
		// failures are values.
		{name: "a failed node is a value the script inspects", src: "r = agent('a')\nresult = r.output if r.ok else 'fallback: ' + r.error\n",
			results: results{id(0): {OK: false, Error: "boom"}}, status: contracts.EvalDone, value: `"fallback: boom"`},
		{name: "a result struct is JSON", src: "result = agent('a')\n",
			results: results{id(0): {OK: false, Error: "boom"}}, status: contracts.EvalDone,
			value: `{"ok":false,"output":"","error":"boom","node":"` + id(0) + `"}`},
		// keys.
		{name: "explicit key gives the id", src: "result = agent('a', key='summary').output\n",
			status: contracts.EvalPending, pending: []string{keyed("summary")}},
		{name: "a keyed node still takes a seq", src: "a = start('a', key='k')\nb = start('b')\nresult = wait([a, b])\n",
			status: contracts.EvalPending, pending: []string{keyed("k"), id(1)}},
		{name: "duplicate key fails", src: "a = start('a', key='k')\nb = start('b', key='k')\nresult = 1\n",
			status: contracts.EvalFailed, errHas: []string{`workflow.star:2:10: start: duplicate node key "k" (first used at workflow.star:1:10)`}},
		{name: "empty key fails", src: "result = start('a', key='')\n", status: contracts.EvalFailed, errHas: []string{"key must be 1 to 256 bytes"}},
		// input, now, json, main.
		{name: "input", src: "result = [input['n'] + 1, input['f'] * 2, input['big'], input['s'], input['l'][1], input['null']]\n",
			input:  `{"n": 41, "f": 1.25, "big": 123456789012345678901234567890, "s": "é", "l": [true, false], "null": null}`,
			status: contracts.EvalDone, value: `[42,2.5,123456789012345678901234567890,"é",false,null]`},
		{name: "no input is None", src: "result = input == None\n", status: contracts.EvalDone, value: `true`},
		{name: "input is frozen", src: "input.append(1)\nresult = 1\n", input: `[]`, status: contracts.EvalFailed, errHas: []string{"frozen"}},
		{name: "main(input)", src: "def main(input):\n    return {'got': input, 'first': agent(input[0]).output}\n", input: `["p"]`,
			results: results{id(0): ok("P")}, status: contracts.EvalDone, value: `{"got":["p"],"first":"P"}`},
		{name: "now is the run's time, RFC 3339 to the second", src: "result = now()\n", status: contracts.EvalDone, value: `"2026-05-01T12:30:15Z"`},
		{name: "json", src: "result = json.decode(json.encode({'a': [1, 'x']}))\n", status: contracts.EvalDone, value: `{"a":[1,"x"]}`},
		// node specs.
		{name: "model, system, tools, max_steps", src: "result = agent('p', model='scripted:demo', system='be brief', tools=['read_file', {'name': 'bash', 'config': {'timeout': 5}, 'read_only': True}], max_steps=3)\n",
			status: contracts.EvalPending, pending: []string{id(0)}},
		{name: "tools=[] is refused", src: "result = agent('p', tools=[])\n", status: contracts.EvalFailed, errHas: []string{"tools=[] is not supported"}},
		{name: "bad tool", src: "result = agent('p', tools=[1])\n", status: contracts.EvalFailed, errHas: []string{"tools[0] is a int"}},
		{name: "bad max_steps", src: "result = agent('p', max_steps=0)\n", status: contracts.EvalFailed, errHas: []string{"max_steps must be a positive int"}},
		{name: "empty prompt", src: "result = agent('')\n", status: contracts.EvalFailed, errHas: []string{"agent: prompt is empty"}},
		{name: "unknown argument", src: "result = agent('p', temperature=1)\n", status: contracts.EvalFailed, errHas: []string{"unexpected keyword argument"}},
		// script errors.
		{name: "fail() has position and backtrace", src: "def check(x):\n    fail('bad: ' + x)\nresult = check('y')\n", status: contracts.EvalFailed,
			errHas: []string{"workflow.star:2:9: fail: bad: y", "Traceback (most recent call last):", "workflow.star:3:15: in <toplevel>"}},
		{name: "runtime error", src: "result = 1 // 0\n", status: contracts.EvalFailed, errHas: []string{"workflow.star:1:12: floored division by zero"}},
		{name: "invalid script", src: "result = nope\n", status: contracts.EvalFailed, errHas: []string{"invalid script: workflow.star:1:10: undefined: nope"}},
		{name: "result not set on every path", src: "if input:\n    result = 1\n", status: contracts.EvalFailed, errHas: []string{"the script finished without setting result"}},
		// the result's JSON.
		{name: "handle in the result", src: "result = start('a')\n", results: results{id(0): ok("")}, status: contracts.EvalFailed, errHas: []string{"wait() for a handle"}},
		{name: "function in the result", src: "result = len\n", status: contracts.EvalFailed, errHas: []string{"is not JSON"}},
		{name: "non-string dict key", src: "result = {1: 2}\n", status: contracts.EvalFailed, errHas: []string{"JSON object keys must be strings"}},
		{name: "NaN", src: "result = float('nan')\n", status: contracts.EvalFailed, errHas: []string{"JSON cannot represent"}},
		{name: "dict keeps insertion order", src: "result = {'z': 1, 'a': (2, 3)}\n", status: contracts.EvalDone, value: `{"z":1,"a":[2,3]}`},
		{name: "output too large", src: "result = 'x' * (1 << 20)\n", status: contracts.EvalFailed, errHas: []string{"output too large"}},
		{name: "output too large in pieces", src: "result = ['x' * 1000 for i in range(2000)]\n", status: contracts.EvalFailed, errHas: []string{"output too large"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := evaluate(t, tt.src, tt.input, tt.results)
			if r.Status != tt.status {
				t.Fatalf("status %s (error %q, pending %v), want %s", r.Status, r.Error, pendingIDs(r), tt.status)
			}
			switch r.Status {
			case contracts.EvalDone:
				if string(r.Value) != tt.value {
					t.Errorf("value %s, want %s", r.Value, tt.value)
				}
			case contracts.EvalPending:
				if got := strings.Join(pendingIDs(r), " "); got != strings.Join(tt.pending, " ") {
					t.Errorf("pending %s, want %s", got, strings.Join(tt.pending, " "))
				}
			case contracts.EvalFailed:
				for _, s := range tt.errHas {
					if !strings.Contains(r.Error, s) {
						t.Errorf("error %q lacks %q", r.Error, s)
					}
				}
			}
			if r.Steps == 0 && !strings.HasPrefix(r.Error, "invalid script") {
				t.Errorf("no steps counted")
			}
		})
	}
}

func TestPendingNodeSpec(t *testing.T) {
	r := evaluate(t, "a = start('first', key='k')\nb = agent('p', model='scripted:demo', system='be brief', tools=['read_file', {'name': 'bash', 'config': {'timeout': 5}, 'read_only': True}], max_steps=3)\nresult = 1\n", "", nil)
	got, _ := json.Marshal(r.Pending)
	want := `[{"id":"` + keyed("k") + `","seq":0,"key":"k","spec":{"prompt":"first","limits":{}}},` +
		`{"id":"` + id(1) + `","seq":1,"spec":{"prompt":"p","model":"scripted:demo","system":"be brief",` +
		`"tools":[{"name":"read_file"},{"name":"bash","config":{"timeout":5},"read_only":true}],"limits":{"max_steps":3}}}]`
	if string(got) != want {
		t.Errorf("pending\n%s\nwant\n%s", got, want)
	}
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		maxSteps uint64
		errHas   string
	}{
		{"infinite loop hits the step limit", "for x in range(2147483647):\n    pass\nresult = 1\n", 100_000, "step limit exceeded: the script ran more than 100000 Starlark steps"},
		{"default step limit", "for x in range(2147483647):\n    pass\nresult = 1\n", 0, "more than 10000000 Starlark steps"},
		{"recursion is not allowed", "def f(n):\n    return f(n - 1)\nresult = f(1000000)\n", 0, "function f called recursively"},
		{"mutual recursion neither", "def f(n):\n    return g(n)\ndef g(n):\n    return f(n)\nresult = f(1)\n", 0, "called recursively"},
		{"recursion through a lambda and map", "def f(x):\n    return map(f, [x])\nresult = f(1)\n", 0, "called recursively"},
		{"deeply nested data", "x = []\nfor i in range(100000):\n    x = [x]\nresult = x\n", 0, "nested more than 1000 deep"},
		{"string bomb", "result = 'x' * 10000000000\n", 0, "repeat count 10000000000 too large"},
		{"too many nodes", "result = [start(str(i)) for i in range(10001)]\n", 0, "more than 10000 nodes in one run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := script.Evaluate(context.Background(), contracts.EvalRequest{Script: tt.src, RunID: runID, MaxSteps: tt.maxSteps})
			if r.Status != contracts.EvalFailed || !strings.Contains(r.Error, tt.errHas) {
				t.Fatalf("got %s %q, want failed with %q", r.Status, r.Error, tt.errHas)
			}
		})
	}
}

func TestEvaluateCancelled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errCustom{})
	r := script.Evaluate(ctx, contracts.EvalRequest{Script: "for x in range(2147483647):\n    pass\nresult = 1\n", RunID: runID})
	if r.Status != contracts.EvalFailed || r.Error != "evaluation cancelled: wall clock" {
		t.Fatalf("got %s %q", r.Status, r.Error)
	}
}

type errCustom struct{}

func (errCustom) Error() string { return "wall clock" }

func TestInvalidInput(t *testing.T) {
	r := evaluate(t, "result = input\n", `{"a":`, nil)
	if r.Status != contracts.EvalFailed || !strings.Contains(r.Error, "decoding input") {
		t.Fatalf("got %s %q", r.Status, r.Error)
	}
}
