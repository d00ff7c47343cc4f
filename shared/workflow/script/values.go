package script

import (
	"fmt"

	"go.starlark.net/starlark"

	"github.com/cairnrun/cairn/shared/contracts"
)

// node is one agent/start call of an evaluation: its identity, what it asks
// for and, when req.Results has it, its result.
type node struct {
	id     string
	seq    int
	key    string
	spec   contracts.NodeSpec
	result *contracts.NodeResult
}

// Handle is what start() returns: a reference to a node, resolved by
// wait(). It is hashable (by node id) so scripts may key dicts by it, and it
// is not JSON: a handle in the script's result is an error.
type Handle struct{ n *node }

var (
	_ starlark.HasAttrs = Handle{}
	_ starlark.HasAttrs = Result{}
)

func (h Handle) String() string        { return fmt.Sprintf("<handle %s>", h.n.id) }
func (h Handle) Type() string          { return "handle" }
func (h Handle) Freeze()               {}
func (h Handle) Truth() starlark.Bool  { return starlark.True }
func (h Handle) Hash() (uint32, error) { return starlark.String(h.n.id).Hash() }
func (h Handle) AttrNames() []string   { return []string{"key", "node"} }

// Attr: .node (id) and .key (explicit key or None). Deliberately no "is it
// done?": a script that branched on it would start different nodes
// depending on the order results arrived in, and replay would diverge.
func (h Handle) Attr(name string) (starlark.Value, error) {
	switch name {
	case "node":
		return starlark.String(h.n.id), nil
	case "key":
		if h.n.key == "" {
			return starlark.None, nil
		}
		return starlark.String(h.n.key), nil
	}
	return nil, nil
}

// Result is a finished node as the script sees it: .ok, .output, .error and
// .node. A failed node is a Result with ok == False, never an abort.
type Result struct {
	node string
	res  contracts.NodeResult
}

func (r Result) String() string {
	return fmt.Sprintf("result(node=%q, ok=%t, output=%q, error=%q)", r.node, r.res.OK, r.res.Output, r.res.Error)
}
func (r Result) Type() string         { return "result" }
func (r Result) Freeze()              {}
func (r Result) Truth() starlark.Bool { return starlark.True }
func (r Result) Hash() (uint32, error) {
	return 0, fmt.Errorf("unhashable type: result")
}
func (r Result) AttrNames() []string { return []string{"error", "node", "ok", "output"} }

func (r Result) Attr(name string) (starlark.Value, error) {
	switch name {
	case "ok":
		return starlark.Bool(r.res.OK), nil
	case "output":
		return starlark.String(r.res.Output), nil
	case "error":
		return starlark.String(r.res.Error), nil
	case "node":
		return starlark.String(r.node), nil
	}
	return nil, nil
}
