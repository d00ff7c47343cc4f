package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

// RunsPerWorkflow is how many of a workflow's newest runs the workflows
// page links.
const RunsPerWorkflow = 5

type workflowSummary = contracts.WorkflowSummary

// runSummary is a run as GET …/runs lists it.
type runSummary = contracts.RunSummary

type runsPage struct {
	Runs []runSummary `json:"runs"`
	Next string       `json:"next_cursor"`
}

type workflowRow struct {
	workflowSummary
	Runs     []runSummary
	MoreRuns bool
}

type workflowsData struct {
	frame
	Rows []workflowRow
	Next string
}

// workflowsPage lists the principal's workflows (an operator's: everyone's),
// newest first, each with links to its newest runs.
func (c *Console) workflowsPage(w http.ResponseWriter, r *http.Request) {
	me, err := c.whoami(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := &workflowsData{frame: frame{Title: "Workflows", Nav: "workflows", Who: me}}
	var pg struct {
		Workflows []workflowSummary `json:"workflows"`
		Next      string            `json:"next_cursor"`
	}
	if err := c.get(r, query("/v1/workflows", "limit", "20", "cursor", r.URL.Query().Get("cursor")), &pg); err != nil {
		c.fail(w, r, err)
		return
	}
	for _, wf := range pg.Workflows {
		var runs runsPage
		if err := c.get(r, query("/v1/workflows/"+seg(wf.ID)+"/runs", "limit", "5"), &runs); err != nil {
			c.fail(w, r, err)
			return
		}
		d.Rows = append(d.Rows, workflowRow{workflowSummary: wf, Runs: runs.Runs, MoreRuns: runs.Next != ""})
	}
	if pg.Next != "" {
		d.Next = query(Prefix+"workflows", "cursor", pg.Next)
	}
	c.render(w, r, http.StatusOK, "workflows", d)
}

type workflowData struct {
	frame
	Workflow contracts.Workflow
	Runs     []runSummary
	Next     string
}

// workflowPage shows one workflow: its script and its runs, a page at a
// time.
func (c *Console) workflowPage(w http.ResponseWriter, r *http.Request) {
	me, err := c.whoami(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	wid := r.PathValue("wid")
	d := &workflowData{frame: frame{Title: "Workflow " + wid, Nav: "workflows", Who: me}}
	if err := c.get(r, "/v1/workflows/"+seg(wid), &d.Workflow); err != nil {
		c.fail(w, r, err)
		return
	}
	var runs runsPage
	if err := c.get(r, query("/v1/workflows/"+seg(wid)+"/runs", "limit", "50", "cursor", r.URL.Query().Get("cursor")), &runs); err != nil {
		c.fail(w, r, err)
		return
	}
	d.Runs = runs.Runs
	if runs.Next != "" {
		d.Next = query(Prefix+"workflows/"+seg(wid), "cursor", runs.Next)
	}
	d.Title = "Workflow " + d.Workflow.Name
	c.render(w, r, http.StatusOK, "workflow", d)
}

// nodeView is a run's node as GET …/runs/{rid} and …/nodes list it.
type nodeView = contracts.NodeView

// MaxRunNodes bounds the nodes a run page reads (100 a page).
const MaxRunNodes = 5000

type runData struct {
	frame
	Run      contracts.WorkflowRun
	Nodes    []nodeView
	States   []string // each node's state, by index
	Count    int
	Cut      bool
	Graph    graph
	Input    string
	Result   string
	Terminal bool
}

// runPage shows a workflow run as a graph of its nodes, each linked to the
// turn running it, with its status and the cancel form.
func (c *Console) runPage(w http.ResponseWriter, r *http.Request) {
	me, err := c.whoami(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	wid, rid := r.PathValue("wid"), r.PathValue("rid")
	d := &runData{frame: frame{Title: "Run " + rid, Nav: "workflows", Who: me}}
	var run struct {
		contracts.WorkflowRun
		Nodes     []nodeView `json:"nodes"`
		NodeCount int        `json:"node_count"`
		NodesNext string     `json:"nodes_next_cursor"`
	}
	base := "/v1/workflows/" + seg(wid) + "/runs/" + seg(rid)
	if err := c.get(r, query(base, "limit", "100"), &run); err != nil {
		c.fail(w, r, err)
		return
	}
	d.Run, d.Nodes, d.Count = run.WorkflowRun, run.Nodes, run.NodeCount
	for cursor := run.NodesNext; cursor != ""; {
		if len(d.Nodes) >= MaxRunNodes {
			d.Cut = true
			break
		}
		var pg struct {
			Nodes []nodeView `json:"nodes"`
			Next  string     `json:"next_cursor"`
		}
		if err := c.get(r, query(base+"/nodes", "limit", "100", "cursor", cursor), &pg); err != nil {
			c.fail(w, r, err)
			return
		}
		d.Nodes, cursor = append(d.Nodes, pg.Nodes...), pg.Next
	}
	for _, n := range d.Nodes {
		d.States = append(d.States, nodeState(n))
	}
	d.Graph = layout(d.Run, d.Nodes, d.States)
	d.Input, d.Result = indent(d.Run.Input), indent(d.Run.Result)
	d.Terminal = d.Run.Status.Terminal()
	c.render(w, r, http.StatusOK, "run", d)
}

// Node states as the run graph shows them.
const (
	NodePending   = "pending"   // started by the script, no turn yet
	NodeRunning   = "running"   // its turn is working
	NodeParked    = "parked"    // its turn waits on an approval
	NodeDone      = "done"      // its result is ok
	NodeFailed    = "failed"    // its result is a failure
	NodeCancelled = "cancelled" // its turn was cancelled
)

// nodeState is a node's state: its result when it has one, else its
// turn's phase.
func nodeState(n nodeView) string {
	switch {
	case n.Result != nil && n.Result.OK:
		return NodeDone
	case n.Result != nil && n.Submission != nil && n.Submission.Phase == contracts.PhaseCancelled:
		return NodeCancelled
	case n.Result != nil:
		return NodeFailed
	case n.Submission == nil:
		return NodePending
	case n.Submission.Phase == contracts.PhaseCancelled:
		return NodeCancelled
	case n.Submission.PendingApprovals > 0:
		return NodeParked
	}
	return NodeRunning
}

// cancelRun cancels a workflow run (POST …/runs/{rid}/cancel: reason).
func (c *Console) cancelRun(w http.ResponseWriter, r *http.Request) {
	wid, rid := r.PathValue("wid"), r.PathValue("rid")
	body := map[string]string{}
	if reason := strings.TrimSpace(r.PostFormValue("reason")); reason != "" {
		body["reason"] = reason
	}
	if err := c.call(r, http.MethodPost, "/v1/workflows/"+seg(wid)+"/runs/"+seg(rid)+"/cancel", body, nil); err != nil {
		c.fail(w, r, err)
		return
	}
	redirect(w, r, runPath(wid, rid))
}

// indent is JSON as indented text ("" for none).
func indent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}
