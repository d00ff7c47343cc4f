package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// MaxTreeNodes bounds the transcript tree a session page reads (the API
// pages it 100 nodes at a time); a bigger tree is cut and says so.
const MaxTreeNodes = 2000

// MaxBlockBytes bounds one block of a node as the tree shows it.
const MaxBlockBytes = 4 << 10

// tree reads the session's whole transcript tree (GET …/transcript?tree=1,
// every page), parents before children; more reports a tree cut at
// MaxTreeNodes.
func (c *Console) tree(r *http.Request, session string) ([]contracts.Node, bool, error) {
	var all []contracts.Node
	cursor := ""
	for {
		var pg struct {
			Nodes []contracts.Node `json:"nodes"`
			Next  string           `json:"next_cursor"`
		}
		if err := c.get(r, query("/v1/sessions/"+seg(session)+"/transcript", "tree", "1", "limit", "100", "cursor", cursor), &pg); err != nil {
			return nil, false, err
		}
		all = append(all, pg.Nodes...)
		if cursor = pg.Next; cursor == "" {
			return all, false, nil
		}
		if len(all) >= MaxTreeNodes {
			return all, true, nil
		}
	}
}

// treeItem is one node as the tree shows it, with the branches that start
// under it when it has more than one child (a node with one child is
// followed by it in the same list).
type treeItem struct {
	ID, Parent, Submission string
	Role                   contracts.Role
	Head, OnHead           bool // the session head; on the path root → head
	Forkable               bool // not an assistant node asking for tools (the API refuses to fork there)
	Blocks                 []blockView
	At                     time.Time
	Branches               [][]treeItem
}

// subtree is what the tree's recursive template gets: a list of items and
// the session they belong to (for their links).
type subtree struct {
	Session string
	Items   []treeItem
}

func newSubtree(session string, items []treeItem) subtree {
	return subtree{Session: session, Items: items}
}

// blockView is a content block as text.
type blockView struct {
	Kind    string // text, tool_use, tool_result
	Tool    string
	Text    string
	IsError bool
}

// buildTree arranges nodes (parents before children) as lists: each root
// starts one; a node with one child is followed by it; a node with several
// holds a branch (a list of its own) per child, oldest first.
func buildTree(nodes []contracts.Node, head string) []treeItem {
	byID := make(map[string]contracts.Node, len(nodes))
	children := map[string][]string{}
	var roots []string
	for _, n := range nodes {
		byID[n.ID] = n
	}
	for _, n := range nodes {
		if _, ok := byID[n.Parent]; n.Parent == "" || !ok {
			roots = append(roots, n.ID)
			continue
		}
		children[n.Parent] = append(children[n.Parent], n.ID)
	}
	onHead := map[string]bool{}
	for id := head; id != ""; {
		n, ok := byID[id]
		if !ok || onHead[id] {
			break
		}
		onHead[id] = true
		id = n.Parent
	}
	var run func(id string) []treeItem
	run = func(id string) []treeItem {
		var out []treeItem
		for id != "" {
			it := item(byID[id], head, onHead[id])
			kids := children[id]
			id = ""
			switch len(kids) {
			case 0:
			case 1:
				id = kids[0]
			default:
				for _, k := range kids {
					it.Branches = append(it.Branches, run(k))
				}
			}
			out = append(out, it)
		}
		return out
	}
	var out []treeItem
	for _, r := range roots {
		out = append(out, run(r)...)
	}
	return out
}

func item(n contracts.Node, head string, onHead bool) treeItem {
	it := treeItem{ID: n.ID, Parent: n.Parent, Submission: n.SubmissionID, Role: n.Role, Head: n.ID == head, OnHead: onHead, Forkable: true, At: n.CreatedAt}
	for _, b := range n.Blocks {
		switch b.Type {
		case contracts.BlockText:
			it.Blocks = append(it.Blocks, blockView{Kind: "text", Text: clip(b.Text, MaxBlockBytes)})
		case contracts.BlockToolUse:
			it.Forkable = false
			if b.ToolCall != nil {
				it.Blocks = append(it.Blocks, blockView{Kind: "tool_use", Tool: b.ToolCall.Name, Text: clip(inputText(b.ToolCall.Input), MaxBlockBytes)})
			}
		case contracts.BlockToolResult:
			if b.ToolResult != nil {
				it.Blocks = append(it.Blocks, blockView{Kind: "tool_result", Text: clip(b.ToolResult.Content, MaxBlockBytes), IsError: b.ToolResult.IsError})
			}
		}
	}
	return it
}

// inputText is a tool call's input as a person reads it: a bash command
// as itself, other input as indented JSON.
func inputText(raw json.RawMessage) string {
	var cmd struct {
		Command string `json:"command"`
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && len(m) == 1 && json.Unmarshal(raw, &cmd) == nil && cmd.Command != "" {
		return cmd.Command
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}
