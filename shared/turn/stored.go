package turn

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/cairnrun/cairn/shared/contracts"
)

// storedNode returns n as the store hands it back once written (it keeps
// nodes as JSON): what the path cache may hold, so that a hit returns what
// a read would. It builds that form directly — the fields JSON drops are
// zero, a time loses its monotonic reading and reads back in UTC, a tool
// call's input is compacted and HTML-escaped as a RawMessage is written —
// and only for what it can tell cheaply: ok is false for invalid UTF-8
// (which an encoder replaces byte by byte), a time not at offset zero or
// outside the years JSON holds, an input that is not valid JSON. Such a
// node is not cached; the next step reads it.
func storedNode(n contracts.Node) (contracts.Node, bool) {
	if !valid(n.ID, n.Parent, n.SessionID, n.SubmissionID, string(n.Role)) || !plainTime(n.CreatedAt) {
		return contracts.Node{}, false
	}
	out := n
	out.CreatedAt = n.CreatedAt.Round(0).UTC()
	if n.Blocks == nil {
		return out, true
	}
	out.Blocks = make([]contracts.Block, len(n.Blocks))
	for i, b := range n.Blocks {
		if !valid(string(b.Type), b.Text) {
			return contracts.Node{}, false
		}
		if b.ToolCall != nil {
			c := b.ToolCall
			if !valid(c.ID, c.Name) {
				return contracts.Node{}, false
			}
			in, ok := storedRaw(c.Input)
			if !ok {
				return contracts.Node{}, false
			}
			b.ToolCall = &contracts.ToolCall{ID: c.ID, Name: c.Name, Input: in}
		}
		if b.ToolResult != nil {
			r := *b.ToolResult
			if !valid(r.CallID, r.Content) {
				return contracts.Node{}, false
			}
			b.ToolResult = &r
		}
		out.Blocks[i] = b
	}
	return out, true
}

// storedRaw is raw as Marshal writes a json.RawMessage (compact,
// HTML-escaped) and Unmarshal reads it back; ok is false for what is not
// valid JSON (nil included: Marshal writes null, read back as "null").
func storedRaw(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 || !utf8.Valid(raw) {
		return nil, false
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return nil, false
	}
	var out bytes.Buffer
	json.HTMLEscape(&out, compact.Bytes())
	return json.RawMessage(out.Bytes()), true
}

func valid(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// plainTime reports whether t reads back from its JSON form as t in UTC:
// at offset zero JSON writes "Z", read back in UTC whatever t's location.
func plainTime(t time.Time) bool {
	_, off := t.Zone()
	return off == 0 && t.Year() >= 0 && t.Year() <= 9999
}
