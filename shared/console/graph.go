package console

import (
	"fmt"
	"math"

	"github.com/cairnrun/cairn/shared/contracts"
)

// The run graph is a comb: the run at the top left, a trunk down its left
// edge, one bus per row of nodes and a short edge from the bus to each
// node. Nodes sit in a grid in seq order, at most graphMaxCols a row, so
// 20 nodes make a few rows and 1,000 forty rows of 25 — every node keeps
// its size and label (the figure scrolls rather than shrinks).
const (
	graphMaxCols = 25
	graphCellW   = 56
	graphCellH   = 44
	graphNodeW   = 48
	graphNodeH   = 26
	graphPad     = 24 // left of the grid: the trunk
	graphTop     = 56 // above the grid: the run
	graphTrunkX  = 12
	graphRootH   = 30
)

type graph struct {
	Width, Height int
	Root          graphRoot
	Trunk         line
	Buses         []line
	Nodes         []graphNode
}

type graphRoot struct {
	X, Y, W, H int
	Label      string
	Status     string
}

type line struct{ X1, Y1, X2, Y2 int }

type graphNode struct {
	ID, State, Href, Label, Title string
	X, Y, W, H, TX, TY            int
	Edge                          line
}

// stateMark is the state as a glyph inside a node: state is never shown by
// colour alone.
var stateMark = map[string]string{
	NodePending: "○", NodeRunning: "…", NodeParked: "?", NodeDone: "✓", NodeFailed: "✗", NodeCancelled: "⊘",
}

// layout places a run's nodes (in seq order, states[i] the state of
// nodes[i]) on the comb.
func layout(run contracts.WorkflowRun, nodes []nodeView, states []string) graph {
	n := len(nodes)
	cols := max(1, min(graphMaxCols, int(math.Ceil(math.Sqrt(float64(2*n))))))
	rows := (n + cols - 1) / cols
	g := graph{
		Width:  max(graphPad+cols*graphCellW, 240),
		Height: graphTop + max(rows, 1)*graphCellH + 4,
		Root:   graphRoot{X: 0, Y: 0, W: 220, H: graphRootH, Status: string(run.Status), Label: fmt.Sprintf("run · %s · %d nodes", run.Status, n)},
	}
	lastBus := graphRootH
	for row := range rows {
		y := graphTop + row*graphCellH
		inRow := min(cols, n-row*cols)
		g.Buses = append(g.Buses, line{X1: graphTrunkX, Y1: y, X2: graphPad + (inRow-1)*graphCellW + graphNodeW/2, Y2: y})
		lastBus = y
	}
	g.Trunk = line{X1: graphTrunkX, Y1: graphRootH, X2: graphTrunkX, Y2: lastBus}
	for i, nd := range nodes {
		row, col := i/cols, i%cols
		x, bus := graphPad+col*graphCellW, graphTop+row*graphCellH
		y := bus + 8
		gn := graphNode{ID: nd.ID, State: states[i], X: x, Y: y, W: graphNodeW, H: graphNodeH,
			TX: x + graphNodeW/2, TY: y + graphNodeH/2 + 4,
			Label: fmt.Sprintf("%d %s", nd.Seq, stateMark[states[i]]),
			Edge:  line{X1: x + graphNodeW/2, Y1: bus, X2: x + graphNodeW/2, Y2: y}}
		gn.Title = fmt.Sprintf("node %s (seq %d): %s — %s", nd.ID, nd.Seq, states[i], clip(nd.Spec.Prompt, 120))
		if nd.Key != "" {
			gn.Title = fmt.Sprintf("node %s (seq %d, key %s): %s — %s", nd.ID, nd.Seq, nd.Key, states[i], clip(nd.Spec.Prompt, 120))
		}
		switch {
		case nd.SessionID != "" && nodeSubmission(nd) != "":
			gn.Href = turnPath(nd.SessionID, nodeSubmission(nd))
		case nd.SessionID != "":
			gn.Href = sessionPath(nd.SessionID)
		}
		g.Nodes = append(g.Nodes, gn)
	}
	return g
}

// nodeSubmission is the turn running a node.
func nodeSubmission(n nodeView) string {
	if n.SubmissionID != "" {
		return n.SubmissionID
	}
	if n.Submission != nil {
		return n.Submission.ID
	}
	return ""
}
